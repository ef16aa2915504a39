"""lmms-eval's ``import evaluate``, deferred to its first use: half the CPU time of ``import lmms_eval.__main__``.

``lmms_eval/api/registry.py`` imports Hugging Face ``evaluate`` at its top for one fallback: ``get_metric`` loads a
metric that no task registered with ``hf_evaluate.load(name)``; no task of ours reaches it. Importing ``evaluate``
imports ``transformers.pipelines``, torchvision and ``torch._dynamo`` with it: about half of what every ``lmms-eval``
process spends on imports (docs/measurements.md). While that module of lmms-eval is being imported, the start-up hook
(``lmms_spatial_startup.DEFERRED``) gives it a :class:`DeferredModule` for ``evaluate``: a module with the real one's
name, spec, file and package path, whose first use executes the real ``evaluate`` into that same module object
(once, under a lock; another thread waits for it), as the import would have. Reading only what every module has (its
file or spec: ``inspect.getmodule``, tracebacks, torch's lists of files) or probing a special name (``__wrapped__``,
``__array__``: tools ask every module) is not a use. An ``evaluate`` that cannot be imported fails at that first use,
as an ``AttributeError`` naming the import's error (lmms-eval's fallback catches it and logs it), not inside whatever
code touched the module; one that is not installed fails at the import, as before.

A program that imports ``evaluate`` itself first gets the real module, and ``LMMS_SPATIAL_DISABLE_HOOK=1`` leaves
every import as it is.
"""

from __future__ import annotations

import copy
import threading
import types
from importlib.machinery import ModuleSpec

_LOCK = threading.RLock()  # one for every deferred module: a first use runs one module's code at a time
# special names that are a use of the module (the rest are probes that every module answers or lacks)
_USES = frozenset({"__version__", "__all__"})


class DeferredModule(types.ModuleType):
    """A module whose code runs at the first use of a name it lacks (then it is a plain module)."""

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__") and name not in _USES:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        with _LOCK:  # another thread's first use is running the code: wait for it to finish
            if type(self) is DeferredModule:
                loader = self.__dict__.get("__loader__")
                if not isinstance(loader, _DeferredLoader):  # this thread's first use: its code asked for a name
                    raise AttributeError(f"partially initialized module {self.__name__!r} has no attribute {name!r}")
                loader.run(self)
        return getattr(self, name)


class _DeferredLoader:
    """Makes a :class:`DeferredModule` and runs nothing; :meth:`run` runs the real loader's code at its first use."""

    def __init__(self, real: ModuleSpec) -> None:
        self.real = real
        self.error: BaseException | None = None

    def create_module(self, spec: ModuleSpec) -> DeferredModule:
        return DeferredModule(spec.name)

    def exec_module(self, module: DeferredModule) -> None:
        pass

    def run(self, module: DeferredModule) -> None:
        """The real module's code, into ``module`` (under the lock); a plain module afterwards. Code that raised
        is not run again: each use after it raises as the first did. A Ctrl-C (or ``SystemExit``) while it runs is
        raised as itself, and the next use runs the code again."""
        name = module.__name__
        if self.error is None:
            ours = module.__spec__, module.__loader__
            try:
                module.__spec__, module.__loader__ = self.real, self.real.loader
                self.real.loader.exec_module(module)
            except Exception as error:
                self.error = error
                module.__spec__, module.__loader__ = ours
            except BaseException:
                module.__spec__, module.__loader__ = ours
                raise
            else:
                module.__class__ = types.ModuleType
                return
        raise AttributeError(
            f"module {name!r} could not be imported ({type(self.error).__name__}: {self.error})"
        ) from self.error


def deferred_spec(real: ModuleSpec) -> ModuleSpec | None:
    """The spec of a :class:`DeferredModule` that runs ``real``'s code at its first use; ``None`` (the import goes on
    as usual) where ``real`` has no loader that can run it later (a namespace package, an old loader)."""
    if real.loader is None or not hasattr(real.loader, "exec_module"):
        return None
    spec = copy.copy(real)  # the real name, origin, package path and cached file: set on the module as usual
    spec.loader = _DeferredLoader(real)
    return spec
