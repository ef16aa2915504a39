"""The Hub dataset cards (``<benchmark>/README.md``), installed as ``lmms_spatial.hub_cards`` package data.

They document each normalised layout and what was verified about each release; an installed
package reads them with ``importlib.resources.files("lmms_spatial.hub_cards")``.
"""
