"""Patches of lmms-eval's internals, one module per concern, each a ``patch_<what>(module)``.

Registered in :data:`lmms_spatial._startup.PATCHES` (run right after lmms-eval imports the
patched module). Every patch is idempotent, cheap, and says in one stderr line when lmms-eval's
internals are not what it expects instead of raising.
"""
