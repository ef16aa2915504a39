"""Test-only lmms-eval plugin (``LMMS_EVAL_PLUGINS=lmms_spatial_test_models`` with this folder's parent on
``PYTHONPATH``): models that let the end-to-end tests stop a run midway and see what the model was asked."""
