"""Workshop code, run from a checkout of the repository and never installed (setup.py discovers only
``lmms_spatial/``, ``tasks/``, ``metrics/`` and ``hub_cards/``):

* :mod:`tools.mutation` (``python -m tools.mutation``): the mutation check of the scorers (CONTRIBUTING.md,
  "Mutation testing"), with :mod:`tools.mutation_lock`, the pytest plugin its runs load;
* :mod:`tools.fake_judge`: a loopback chat-completions server with scripted replies, for the tests and
  :mod:`tools.bench_judge` (``python -m tools.bench_judge``: the judge layer's throughput against it).

Run from the repository root (``python -m tools.<name>``); the tests import it through pytest's ``pythonpath``
(pyproject.toml).
"""
