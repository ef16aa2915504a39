"""lmms-eval's task YAMLs parsed by libyaml: the same configs, about 4 CPU-seconds less at every start.

Every ``lmms-eval`` run indexes its ~1,900 built-in task YAMLs (``TaskManager._get_task_and_group``) and ours, each
file read by ``lmms_eval.utils.load_yaml_config`` with ``yaml.full_load``: PyYAML's pure-Python parser: several
times slower than libyaml's for the same index (figures: docs/measurements.md). :func:`patch_yaml_loading` wraps
``load_yaml_config`` so that a file it is asked to read is parsed by :class:`_LibyamlFullLoader`: libyaml's parser
under PyYAML's own full constructor and resolver, with the very constructor and resolver tables ``yaml.full_load``
would use (``yaml.FullLoader``'s, ``!function`` registered by the same ``yaml.add_constructor`` call lmms-eval
makes), so the same Python values come out. The parsed mapping is then handed to lmms-eval's own function as
``yaml_config``: includes, ``yaml_dir`` and data files stay its code. Nothing is patched where PyYAML was built
without libyaml.
"""

from __future__ import annotations

import yaml

from lmms_spatial.plugin import internal

_TABLES = ("yaml_constructors", "yaml_multi_constructors", "yaml_implicit_resolvers", "yaml_path_resolvers")
_MODES = {"simple": "ignore_constructor", "full": "import_function"}  # load_yaml_config's modes and their !function

if getattr(yaml, "__with_libyaml__", False):

    class _LibyamlFullLoader(yaml.CFullLoader):
        """``yaml.FullLoader`` with libyaml's parser; ``name`` is the stream's, as PyYAML's reader sets it
        (lmms-eval's ``!function`` constructor finds the task's Python file next to ``loader.name``)."""

        def __init__(self, stream) -> None:
            super().__init__(stream)
            self.name = getattr(stream, "name", "<file>")

else:  # pragma: no cover - PyYAML wheels ship libyaml; a source build may not
    _LibyamlFullLoader = None


def parse(path: str, constructor) -> object:
    """``yaml.full_load`` of the file at ``path`` after ``yaml.add_constructor("!function", constructor)``, as
    ``load_yaml_config`` does it, with libyaml's parser."""
    yaml.add_constructor("!function", constructor)
    for table in _TABLES:  # what full_load would use now, shared, never copied
        setattr(_LibyamlFullLoader, table, getattr(yaml.FullLoader, table))
    with open(path, "rb") as file:
        loader = _LibyamlFullLoader(file)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()


def patch_yaml_loading(module) -> None:
    """Wrap ``module.load_yaml_config`` (``lmms_eval.utils``) once: a file it reads is parsed by libyaml."""
    if _LibyamlFullLoader is None:
        return
    load = internal(module, "load_yaml_config", "task YAMLs are parsed by PyYAML's pure-Python parser (a slower start)")
    if load is None or getattr(load, "_lmms_spatial", False):
        return
    constructors = {mode: getattr(module, name, None) for mode, name in _MODES.items()}

    def load_yaml_config(yaml_path=None, yaml_config=None, yaml_dir=None, mode="full"):
        constructor = constructors.get(mode)
        if yaml_config is None and yaml_path is not None and constructor is not None:
            yaml_config = parse(yaml_path, constructor)
        return load(yaml_path=yaml_path, yaml_config=yaml_config, yaml_dir=yaml_dir, mode=mode)

    load_yaml_config._lmms_spatial = True
    load_yaml_config.__wrapped__ = load
    load_yaml_config.__doc__ = load.__doc__
    module.load_yaml_config = load_yaml_config
