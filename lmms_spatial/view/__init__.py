"""``lmms-spatial view RUN... --out site/``: a static page with the report's tables and every sample behind them.

One folder (``index.html``, ``app.js``, ``app.css``, ``data/*.js``, ``thumbs/*.jpg``, ``large/*.js``) that opens
from disk with no server and makes no request outside itself: data is JSON wrapped in ``.js`` files loaded by
``<script>`` tags (``fetch()`` of ``file://`` is blocked), every text from a model, a judge or a dataset is set
with ``textContent``. :mod:`lmms_spatial.view.build` writes it; what a benchmark adds to a sample (a map grid, the
option order) comes from its ``tasks/<key>/view.py`` (:mod:`lmms_spatial.view.evidence`).
"""
