/* lmms-spatial view: the page (plain JS, no library, no request outside this folder).
 * Data arrives by <script> files calling LMMSView.manifest / list / detail / image (file:// pages cannot fetch()).
 * Every text from a run (model, judge, dataset) is set with textContent or as a text node: never parsed as HTML. */
"use strict";
(function () {
  const S = {
    manifest: null, lists: {}, details: {}, images: {}, texts: {}, waiting: {}, rows: [], page: 0, perPage: 100,
    marked: new Map(), timing: { start: performance.now() }, want: new Set(), seq: 0,
    current: null, view: [], openSeq: 0, reveal: false, revealDetail: false,
  };
  const $ = (id) => document.getElementById(id);
  const OUTCOME_TEXT = { right: "right", wrong: "wrong", unparsed: "unparsed", judge_failure: "judge failure", not_scored: "not scored" };
  const WRONG = new Set(["wrong", "unparsed", "judge_failure"]);  // what n / p step to: an answer not right (scored)
  const WIDE = window.matchMedia("(min-width: 1100px)");  // list and detail side by side (app.css)

  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    if (props) for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      e.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return e;
  }
  const clear = (node) => { while (node.firstChild) node.removeChild(node.firstChild); return node; };
  const status = (text) => { $("status").textContent = text; };

  // ---------------------------------------------------------------- loading
  function load(kind, key, src) {
    const k = kind + ":" + key;
    if (kind === "list" && S.lists[key]) return Promise.resolve(S.lists[key]);
    if (kind === "detail" && S.details[key]) return Promise.resolve(S.details[key]);
    if (kind === "image" && S.images[key]) return Promise.resolve(S.images[key]);
    if (kind === "text" && S.texts[key] !== undefined) return Promise.resolve(S.texts[key]);
    if (!S.waiting[k]) {
      S.waiting[k] = {};
      S.waiting[k].promise = new Promise((resolve, reject) => {
        S.waiting[k].resolve = resolve;
        const s = el("script", { src: src });
        s.onerror = () => reject(new Error("cannot load " + src));
        document.body.appendChild(s);
      });
    }
    return S.waiting[k].promise;
  }
  function arrived(kind, key, value) {
    const w = S.waiting[kind + ":" + key];
    if (w && w.resolve) w.resolve(value);
  }
  const loadList = (cid) => load("list", cid, "data/l" + cid + ".js");
  const loadDetail = (cid) => load("detail", cid, "data/d" + cid + ".js");
  const loadImage = (id) => load("image", id, "large/" + id + ".js");
  const loadText = (id) => load("text", id, "data/t" + id + ".js");
  const lineCount = (n) => n + (n === 1 ? " line" : " lines");

  window.LMMSView = {
    timing: S.timing,
    state: S,
    exported: {},
    manifest(m) { S.manifest = m; S.timing.manifest = performance.now() - S.timing.start; start(); },
    list([cid, rows]) { S.lists[cid] = rows; arrived("list", cid, rows); },
    detail([cid, rows]) { S.details[cid] = rows; arrived("detail", cid, rows); },
    image(id, url) { S.images[id] = url; arrived("image", id, url); },
    text([id, text]) { S.texts[id] = text; arrived("text", id, text); },
  };

  // ---------------------------------------------------------------- tables
  function renderTables() {
    const m = S.manifest, root = clear($("tab-tables"));
    root.appendChild(el("h2", null, "Runs"));
    root.appendChild(el("ul", null, m.runs.map((r) => el("li", null, r.describe))));
    if (m.warnings.length) root.appendChild(el("ul", { class: "notes" }, m.warnings.map((w) => el("li", null, w))));
    if (m.skipped) root.appendChild(el("p", { class: "notes", id: "skipped-lines" }, lineCount(m.skipped) +
      " of the samples files skipped: not samples (cut short, not UTF-8, not JSON or not a JSON object; each named in the warnings above). The samples list holds the other lines."));
    for (const note of m.data_notes || []) root.appendChild(el("p", { class: "notes data-note" }, note));
    if (m.missing_data.length) root.appendChild(el("p", { class: "notes" }, "No images for " + m.missing_data.join(", ") +
      ": the page was written without a local copy of their data (lmms-spatial view --data KEY=PATH)."));
    for (const t of m.tables) {
      const sec = el("section", { class: "report-table", "data-key": t.key });
      sec.appendChild(el("h3", null, t.title));
      sec.appendChild(el("p", { class: "notes" }, "Source: " + t.source));
      const thead = el("thead", null, el("tr", null, el("th", null, "Model"), t.headers.map((h) => el("th", null, h))));
      const tbody = el("tbody");
      for (const row of t.rows) {
        const tr = el("tr", { class: "kind-" + row.kind }, el("td", null, row.label));
        row.cells.forEach((c, i) => {
          const td = el("td", { class: "num" + (c.cond ? " has-cond" : ""), "data-col": t.headers[i], title: c.note || null }, c.t);
          if (c.cond) {
            td.addEventListener("mouseenter", (ev) => showConditions(ev, row, t.headers[i], c, false));
            td.addEventListener("mouseleave", () => { if (!S.pinned) $("popup").hidden = true; });
            td.addEventListener("click", (ev) => { ev.stopPropagation(); showConditions(ev, row, t.headers[i], c, true); });
          }
          tr.appendChild(td);
        });
        tbody.appendChild(tr);
      }
      sec.appendChild(el("div", { class: "scroll" }, el("table", { class: "numbers" }, thead, tbody)));
      sec.appendChild(el("ul", { class: "notes" }, t.notes.map((n) => el("li", null, n))));
      root.appendChild(sec);
    }
    if (m.plots.length) {
      root.appendChild(el("h2", null, "Plots"));
      root.appendChild(el("div", { class: "plots" }, m.plots.map((p) => el("img", { src: p, alt: p, loading: "lazy" }))));
    }
  }
  function showConditions(ev, row, header, cell, pin) {
    const p = clear($("popup"));
    S.pinned = pin;
    p.appendChild(el("strong", null, row.label + " · " + header + ": " + cell.t));
    if (cell.note) p.appendChild(el("p", null, cell.note));
    const dl = el("dl");
    for (const [k, v] of cell.cond) { if (k) { dl.appendChild(el("dt", null, k)); dl.appendChild(el("dd", null, v)); } else dl.appendChild(el("hr")); }
    p.appendChild(dl);
    if (pin) p.appendChild(el("button", { type: "button", onclick: () => { S.pinned = false; p.hidden = true; } }, "close"));
    p.hidden = false;
    p.style.left = Math.min(ev.pageX + 12, window.scrollX + window.innerWidth - 420) + "px";
    p.style.top = (ev.pageY + 12) + "px";
  }

  // ---------------------------------------------------------------- samples: filters and list
  const F = () => ({
    benchmark: $("f-benchmark").value, task: $("f-task").value, run: $("f-run").value, category: $("f-category").value,
    outcome: $("f-outcome").value, text: $("f-text").value.trim().toLowerCase(), sort: $("f-sort").value, compare: $("f-compare").checked,
  });
  function options(select, values, all) {
    const keep = select.value;
    clear(select).appendChild(el("option", { value: "" }, all));
    for (const [v, label] of values) select.appendChild(el("option", { value: v }, label));
    select.value = [...select.options].some((o) => o.value === keep) ? keep : "";
  }
  function fillFilters() {
    const m = S.manifest, f = F();
    const entries = m.tasks;
    options($("f-benchmark"), [...new Set(entries.map((e) => e.benchmark))].sort().map((b) => [b, b || "(none)"]), "all benchmarks");
    const inBench = entries.filter((e) => !$("f-benchmark").value || e.benchmark === $("f-benchmark").value);
    options($("f-task"), [...new Set(inBench.map((e) => e.task))].sort().map((t) => [t, t]), "all tasks");
    options($("f-run"), m.runs.map((r, i) => [String(i), r.label + (m.runs.filter((x) => x.label === r.label).length > 1 ? " #" + (i + 1) : "")]), "all models");
    const cats = new Set();
    for (const e of selectedEntries()) e.categories.forEach((c) => cats.add(c));
    options($("f-category"), [...cats].filter((c) => c).sort().map((c) => [c, c]), "all categories");
    options($("f-outcome"), m.outcomes.map((o) => [o, OUTCOME_TEXT[o] || o]), "all outcomes");
    void f;
  }
  function selectedEntries() {
    const b = $("f-benchmark").value, t = $("f-task").value, r = $("f-run").value;
    return S.manifest.tasks.filter((e) => (!b || e.benchmark === b) && (!t || e.task === t) && (r === "" || String(e.run) === r));
  }
  function matches(f, row) {
    if (f.category && row[5] !== f.category) return false;
    if (f.outcome && S.manifest.outcomes[row[1]] !== f.outcome) return false;
    if (f.text) {
      const hay = (row[6] + "\n" + row[7] + "\n" + row[3] + "\n" + row[4] + "\n" + row[0]).toLowerCase();
      if (!hay.includes(f.text)) return false;
    }
    return true;
  }
  function refresh() {
    const seq = ++S.seq, f = F(), entries = selectedEntries();
    S.rows = []; S.page = 0; S.complete = false;
    const chunks = [];
    for (const e of entries) for (const c of e.chunks) chunks.push([e, c]);
    let done = 0;
    const total = chunks.length;
    const take = (e, c, rows) => { rows.forEach((row, i) => { if (matches(f, row)) S.rows.push({ e, c: c.id, i, row }); }); };
    const finish = () => { if (seq === S.seq) { S.complete = true; S.timing.allLoaded = S.timing.allLoaded || performance.now() - S.timing.start; renderList(true); } };
    // already loaded chunks at once; the others in order, a few at a time, the list shown as they come
    let next = 0;
    const pump = () => {
      if (seq !== S.seq) return;
      while (next < total && S.inflight < 6) {
        const [e, c] = chunks[next++];
        S.inflight++;
        loadList(c.id).then((rows) => {
          S.inflight--;
          if (seq !== S.seq) { S.pump(); return; }  // a newer selection waits for these slots
          take(e, c, rows); done++;
          status(done < total ? "loading samples " + done + "/" + total + " chunks" : "");
          if (done === total) finish(); else scheduleRender();
          pump();
        }, (err) => { S.inflight--; status(String(err)); S.pump(); });
      }
    };
    S.pump = pump;
    S.inflight = S.inflight || 0;
    if (!total) finish(); else pump();
  }
  function scheduleRender() {
    if (S.renderTimer) return;
    S.renderTimer = setTimeout(() => { S.renderTimer = null; renderList(false); }, 150);
  }
  function sortedRows(f) {
    const rows = S.rows.slice();
    const score = (r) => (r.row[2] === null ? -1 : r.row[2]);
    if (f.sort === "score-asc") rows.sort((a, b) => score(a) - score(b));
    else if (f.sort === "score-desc") rows.sort((a, b) => score(b) - score(a));
    else if (f.sort === "outcome") rows.sort((a, b) => a.row[1] - b.row[1]);
    else if (f.sort === "category") rows.sort((a, b) => (a.row[5] < b.row[5] ? -1 : a.row[5] > b.row[5] ? 1 : 0));
    return rows;
  }
  const qkey = (task, doc) => task + "\u0000" + String(doc);
  function renderList(complete) {
    if (S.renderTimer) { clearTimeout(S.renderTimer); S.renderTimer = null; }
    const f = F(), m = S.manifest, thead = clear($("list").tHead), tbody = clear($("list").tBodies[0]);
    let rows = sortedRows(f);
    const loading = complete || S.complete ? "" : " (loading…)";
    if (f.compare) {
      const groups = new Map();
      for (const r of rows) {
        const k = qkey(r.e.task, r.row[0]);
        if (!groups.has(k)) groups.set(k, { task: r.e.task, doc: r.row[0], first: r, by: {} });
        groups.get(k).by[r.e.run] = r;
      }
      const runs = [...new Set(rows.map((r) => r.e.run))].sort((a, b) => a - b);
      const list = [...groups.values()];
      for (const g of list) g.runs = runs;
      const at = showView(list, true);
      $("list-info").textContent = list.length + " questions, " + rows.length + " answers" + loading;
      thead.appendChild(el("tr", null, el("th", null, "mark"), el("th", null, "task"), el("th", null, "doc"), el("th", null, "question"), el("th", null, "truth"), runs.map((i) => el("th", null, m.runs[i].label))));
      pageOf(list).forEach((g) => {
        const tr = el("tr", { class: "compare-row", "data-task": g.task, "data-doc": String(g.doc) },
          el("td", null, markBox(g.first)), el("td", null, g.task), el("td", null, String(g.doc)), el("td", { class: "q", title: g.first.row[6] }, g.first.row[6]), el("td", null, g.first.row[4]),
          runs.map((i) => { const r = g.by[i]; return r ? el("td", { class: "o-" + m.outcomes[r.row[1]], title: OUTCOME_TEXT[m.outcomes[r.row[1]]] }, r.row[3] || "(unparsed)") : el("td", null, "-"); }));
        tr.addEventListener("click", (ev) => { if (ev.target.type !== "checkbox") openSample(g.first); });
        tbody.appendChild(tr);
      });
      pager(list.length);
      return shownCurrent(at);
    }
    const at = showView(rows, false);
    $("list-info").textContent = rows.length + " samples" + loading;
    thead.appendChild(el("tr", null, ["mark", "model", "task", "doc", "category", "outcome", "score", "parsed", "truth", "question", "reply", "image"].map((h) => el("th", null, h))));
    pageOf(rows).forEach((r) => {
      const row = r.row, o = m.outcomes[row[1]];
      const tr = el("tr", { class: "sample-row", "data-task": r.e.task, "data-doc": String(row[0]), "data-run": String(r.e.run) },
        el("td", null, markBox(r)), el("td", null, m.runs[r.e.run].label), el("td", null, r.e.task), el("td", null, String(row[0])),
        el("td", null, row[5]), el("td", { class: "o-" + o }, OUTCOME_TEXT[o]), el("td", { class: "num" }, row[2] === null ? "-" : String(row[2])),
        el("td", { class: "parsed" }, row[3]), el("td", null, row[4]), el("td", { class: "q", title: row[6] }, row[6]), el("td", { class: "reply", title: row[7] }, row[7]),
        el("td", null, row[8] ? el("img", { class: "thumb", src: "thumbs/" + row[8] + ".jpg", alt: "", loading: "lazy" }) : ""));
      tr.addEventListener("click", (ev) => { if (ev.target.type !== "checkbox") openSample(r); });
      tbody.appendChild(tr);
    });
    pager(rows.length);
    if (!S.timing.firstPage && rows.length) S.timing.firstPage = performance.now() - S.timing.start;
    shownCurrent(at);
  }
  // The list as shown (its filter and sort): what j / k / n / p step through. An item is a sample, or in compare
  // mode a question (its samples in .by). While a sample was just opened (S.reveal), its page is shown.
  function showView(list, compare) {
    S.view = list; S.viewCompare = compare;
    const at = S.current ? list.findIndex(isCurrent) : -1;
    if (S.reveal && at >= 0) S.page = Math.floor(at / S.perPage);
    return at;
  }
  function shownCurrent(at) {
    markCurrent(S.reveal && at >= 0);
    if (S.complete) S.reveal = false;
    if (S.revealDetail && !WIDE.matches) revealDetail();  // a deep link on a narrow screen: the list grew above it
    if (S.complete) S.revealDetail = false;
  }
  function isCurrent(item) {
    const c = S.current;
    if (!c) return false;
    const r = S.viewCompare ? item.first : item;
    return r.e.task === c.task && String(r.row[0]) === c.doc && (S.viewCompare || r.e.run === c.run);
  }
  // the current sample's row highlighted (and scrolled into the list's view: scroll)
  function markCurrent(scroll) {
    const c = S.current;
    for (const tr of document.querySelectorAll("#list tbody tr.current")) tr.classList.remove("current");
    if (!c) return;
    for (const tr of $("list").tBodies[0].rows) {
      if (tr.dataset.task === c.task && tr.dataset.doc === c.doc && (S.viewCompare || tr.dataset.run === String(c.run))) {
        tr.classList.add("current");
        if (scroll) {
          if (WIDE.matches) {  // within the list's pane only: the page stays where it is
            const box = $("list-scroll"), head = $("list").tHead.getBoundingClientRect().height;
            const top = tr.getBoundingClientRect().top - box.getBoundingClientRect().top;
            if (top < head || top + tr.offsetHeight > box.clientHeight) box.scrollTop += top - head - Math.max(0, (box.clientHeight - head - tr.offsetHeight) / 3);
          }
        }
        return;
      }
    }
  }
  function pageOf(list) { S.page = Math.min(S.page, Math.max(0, Math.ceil(list.length / S.perPage) - 1)); return list.slice(S.page * S.perPage, (S.page + 1) * S.perPage); }
  function pager(n) {
    const pages = Math.max(1, Math.ceil(n / S.perPage));
    $("page").textContent = "page " + (S.page + 1) + " of " + pages;
    $("prev").disabled = S.page === 0; $("next").disabled = S.page >= pages - 1;
  }
  function markBox(r) {
    const k = qkey(r.e.task, r.row[0]);
    const box = el("input", { type: "checkbox", class: "mark", title: "mark for the figure" });
    box.checked = S.marked.has(k);
    box.addEventListener("change", () => { if (box.checked) S.marked.set(k, { task: r.e.task, doc: r.row[0] }); else S.marked.delete(k); $("marked-count").textContent = S.marked.size; });
    return box;
  }

  // ---------------------------------------------------------------- one sample
  function chunkOf(entry, doc) {
    const key = (d) => (typeof d === "number" ? [0, d] : [1, String(d)]);
    const le = (a, b) => (a[0] !== b[0] ? a[0] < b[0] : a[1] <= b[1]);
    const k = key(doc);
    return entry.chunks.find((c) => le(key(c.first), k) && le(k, key(c.last)));
  }
  async function findRow(entry, doc) {
    const c = chunkOf(entry, doc);
    if (!c) return null;
    const rows = await loadList(c.id);
    const i = rows.findIndex((row) => String(row[0]) === String(doc));
    return i < 0 ? null : { e: entry, c: c.id, i, row: rows[i] };
  }
  // A text longer than the preview (m.preview characters) shows its start, "…" and a "show all" button that puts the
  // whole text in the same text node: from data/t<N>.js for a prompt, reply or parsed answer (x.long[field] = [N,
  // length]), from the text given (whole) otherwise. The page never holds a long text in its DOM unasked.
  function longText(field, shown, cut, whole) {
    const node = document.createTextNode(shown);
    if (!cut) return { nodes: [node], button: null };
    const dots = el("span", { class: "cut" }, "…");
    const button = el("button", { type: "button", class: "show-all", "data-field": field },
      "show all (" + cut[1].toLocaleString("en-US") + " characters)");
    button.addEventListener("click", async () => {
      button.disabled = true;
      node.data = whole !== undefined ? whole : await loadText(cut[0]);
      dots.remove(); button.remove();
    });
    return { nodes: [node, dots], button };
  }
  // a text the page holds whole (a score record, a stage's output) shown as a long text: its preview, then all of it
  function wholeText(field, whole) {
    const n = S.manifest.preview, cut = whole.length > n ? [null, whole.length] : null;
    return longText(field, cut ? whole.slice(0, n) : whole, cut, whole);
  }
  function recordText(pre, after, record) {
    const t = wholeText("record", JSON.stringify(record, null, 1));
    pre.append(...t.nodes);
    if (t.button) after.appendChild(t.button);
  }
  // Open a sample: its row highlighted (its page shown), the link set (keepHash: a deep link, already set) and its
  // detail drawn from the top. A newer open (a key held down) makes an older one stop where it is.
  async function openSample(r, keepHash) {
    const m = S.manifest, seq = ++S.openSeq, row = r.row, o = m.outcomes[row[1]];
    S.current = { task: r.e.task, doc: String(row[0]), run: r.e.run };
    S.reveal = true;
    const at = S.view.findIndex(isCurrent);
    if (at >= 0 && Math.floor(at / S.perPage) !== S.page) renderList(S.complete);  // its page, the row in view
    else markCurrent(true);
    if (S.complete) S.reveal = false;
    if (!keepHash) history.replaceState(null, "", "#task=" + encodeURIComponent(r.e.task) + "&doc=" + encodeURIComponent(String(row[0])) + "&run=" + r.e.run);
    const details = await loadDetail(r.c);
    if (seq !== S.openSeq) return;
    const x = details[r.i], d = clear($("detail"));
    d.hidden = false;
    d.appendChild(el("h2", null, m.runs[r.e.run].label + " · " + r.e.task + " · doc " + row[0] + " · ", el("span", { class: "o-" + o, id: "detail-outcome" }, OUTCOME_TEXT[o])));
    const mk = markBox(r); d.appendChild(el("label", null, mk, " mark for the figure"));
    const kv = (pairs) => el("dl", { class: "kv" }, pairs.filter((p) => p[1] !== null && p[1] !== undefined && p[1] !== "").map(([k, v]) => [el("dt", null, k), el("dd", null, v instanceof Node ? v : String(v))]));
    const long = x.long || {};
    d.appendChild(conversation(r, x));
    const parsed = x.parsed === null ? null : longText("parsed", x.parsed, long.parsed);
    const tokens = tokenText(x.tokens);
    d.appendChild(kv([[x.judged_whole ? "answer (the whole reply, as judged)" : "parsed answer", parsed === null ? "(none: unparsed)" : parsed.button ? el("span", null, parsed.nodes, " ", parsed.button) : x.parsed], ["why", x.why], ["rule", x.rule], ["ground truth", x.truth],
      ["score", row[2] === null ? "-" : row[2]], ["metric", x.metric], ["category", row[5]], ["tokens", tokens === null ? null : el("span", { id: "detail-tokens", class: x.tokens.recorded ? "" : "notes" }, tokens)], ["document hash", x.doc_hash]]));
    for (const b of x.blocks) d.appendChild(block(b));
    d.appendChild(el("h3", null, "Every model on this question"));
    const cmp = el("table", { id: "detail-compare" }, el("thead", null, el("tr", null, ["model", "parsed", "outcome", "score", "reply"].map((h) => el("th", null, h)))));
    const tb = el("tbody"); cmp.appendChild(tb); d.appendChild(cmp);
    // the record is written into the page when it is opened (it may hold a long reply), and shown as a long text
    const recPre = el("pre", { id: "detail-record" }), recAfter = el("p", { class: "show-all-line" });
    const rec = el("details", null, el("summary", null, "score record (" + (x.metric || "none") + ")"), recPre, recAfter);
    rec.addEventListener("toggle", () => { if (rec.open && !recPre.firstChild) recordText(recPre, recAfter, x.record); });
    d.appendChild(rec);
    revealDetail();
    for (const e of m.tasks.filter((e) => e.task === r.e.task)) {
      const other = await findRow(e, row[0]);
      if (seq !== S.openSeq) return;
      if (!other) continue;
      const oo = m.outcomes[other.row[1]];
      tb.appendChild(el("tr", { class: e.run === r.e.run ? "current" : "" }, el("td", null, m.runs[e.run].label), el("td", null, other.row[3]),
        el("td", { class: "o-" + oo }, OUTCOME_TEXT[oo]), el("td", { class: "num" }, other.row[2] === null ? "-" : String(other.row[2])), el("td", null, other.row[7])));
    }
    d.dataset.shown = S.current.task + "\u0000" + S.current.doc + "\u0000" + S.current.run;
  }
  // The detail's top in view, below the sticky header: side by side, the detail's pane from its top (the page
  // scrolled only if the pane is not in view); stacked, the page scrolled to it.
  function revealDetail() {
    const d = $("detail"), head = document.querySelector("header").getBoundingClientRect().bottom;
    d.scrollTop = 0;
    const top = d.getBoundingClientRect().top;
    if (!WIDE.matches || top < head || top > window.innerHeight / 2) window.scrollTo(0, Math.max(0, window.scrollY + top - head - 8));
  }
  // lmms-eval 0.7's token_counts, as build.py sums them (evidence.token_counts); null: the line has none
  function tokenText(t) {
    if (!t) return null;
    if (!t.recorded) return "not recorded (the model reported none)";
    const counts = [["input", t.input], ["output", t.output], ["reasoning", t.reasoning]].filter((c) => c[1] !== null && c[1] !== undefined);
    return counts.map((c) => c[1].toLocaleString("en-US") + " " + c[0]).join(" · ") + " tokens" +
      (t.requests > 1 ? " (" + (t.recorded < t.requests ? t.recorded + " of " + t.requests + " requests recorded, summed" : "summed over " + t.requests + " requests") + ")" : "");
  }
  // The request as turns, then the reply. A line logging its request as messages (x.turns): each turn, its texts and
  // its images in place (the k-th image part is the document's k-th image). A line logging one text (lmms-eval 0.7):
  // one user turn, the document's images then the text (our tasks' doc_to_messages order), the task's shared
  // template in grey. Stages asked before the reply (record.stage_outputs: a QA-after-map task's map) come next.
  function conversation(r, x) {
    const m = S.manifest, long = x.long || {};
    const conv = el("section", { id: "detail-conversation", class: "conversation" }, el("h3", null, "Conversation"));
    const crops = x.blocks.find((b) => b.type === "crops");
    const image = (k) => (k < x.images.length ? imageBox(x.images[k], "thumbs/" + x.images[k] + ".jpg", k === (crops ? crops.image : -1) ? crops.items : null)
      : el("span", { class: "notes imgbox-missing" }, "[image " + (k + 1) + ": not in this page]"));
    const noImage = () => el("p", { class: "notes" }, r.e.data === null && r.e.benchmark ? "Images: not in this page (written without the " + r.e.benchmark + " data)." : "No image found for this document.");
    const turn = (role, who, ...kids) => el("div", { class: "turn turn-" + role, "data-role": role }, el("div", { class: "role" }, who), kids);
    const text = (field, shown, cut, id, pre, post) => {
      const t = longText(field, shown, cut);
      return [el("pre", { id }, pre ? el("span", { class: "tmpl" }, pre) : null, t.nodes, post ? el("span", { class: "tmpl" }, post) : null),
        t.button ? el("p", { class: "show-all-line" }, t.button) : null];
    };
    if (x.turns) {
      const used = new Set();
      for (const t of x.turns) for (const p of t.parts) if (p.image !== undefined) used.add(p.image);
      const rest = x.images.map((_, k) => k).filter((k) => !used.has(k));  // images no part names: first, in the first user turn
      let first = true, promptId = "detail-prompt";
      x.turns.forEach((t) => {
        const kids = [];
        if (first && t.role === "user") {
          first = false;
          if (rest.length) kids.push(el("div", { class: "images" }, rest.map(image)));
          else if (!x.images.length && !used.size) kids.push(noImage());
        }
        t.parts.forEach((p) => {
          if (p.text !== undefined) {
            kids.push(text("turn", p.text, p.long, t.role === "user" ? promptId : null));
            if (t.role === "user") promptId = null;
          }
          else if (p.image !== undefined) kids.push(el("div", { class: "images" }, image(p.image)));
          else kids.push(el("p", { class: "notes" }, "[" + p.other + "]"));
        });
        conv.appendChild(turn(t.role, t.role, kids));
      });
    } else {
      conv.appendChild(turn("user", "user", x.images.length ? el("div", { class: "images" }, x.images.map((_, k) => image(k))) : noImage(),
        text("prompt", x.prompt, long.prompt, "detail-prompt", r.e.prefix, r.e.suffix)));
    }
    const stages = x.record && x.record.stage_outputs;
    if (stages && typeof stages === "object" && !Array.isArray(stages)) {
      for (const [name, out] of Object.entries(stages)) {
        const shown = out === null || out === undefined ? "(none recorded)" : typeof out === "string" ? out : JSON.stringify(out);
        const t = wholeText("stage", shown);
        conv.appendChild(turn("assistant", "assistant · stage " + name + (x.turns ? "" : " (asked before the last question: the line logs the user turns as one text)"),
          el("pre", { class: "stage" }, t.nodes), t.button ? el("p", { class: "show-all-line" }, t.button) : null));
      }
    }
    conv.appendChild(turn("assistant", "assistant · " + m.runs[r.e.run].label + " (the reply)", text("reply", x.reply, long.reply, "detail-reply")));
    return conv;
  }
  function imageBox(id, src, crops) {
    const box = el("div", { class: "imgbox", "data-image": id }, el("img", { src, alt: "" }));
    if (crops) for (const c of crops) {
      const [x1, y1, x2, y2] = c.box;
      const div = el("div", { class: "crop" + (c.kept ? "" : " dropped"), title: c.label }, el("span", null, c.label));
      div.style.left = 100 * x1 + "%"; div.style.top = 100 * y1 + "%"; div.style.width = 100 * (x2 - x1) + "%"; div.style.height = 100 * (y2 - y1) + "%";
      box.appendChild(div);
    }
    box.addEventListener("click", async () => {
      const lb = clear($("lightbox"));
      const url = await loadImage(id);
      const big = imageBox(id, url, crops);
      lb.appendChild(big); lb.hidden = false;
    });
    return box;
  }
  function block(b) {
    const sec = el("section", { class: "block block-" + b.type }, el("h3", null, b.title || b.type));
    if (b.type === "options") {
      sec.appendChild(el("ol", { type: "A" }, b.items.map((it) => el("li", { class: (it.truth ? "o-right" : "") + (it.parsed && !it.truth ? " o-wrong" : "") },
        it.text, it.truth ? " (ground truth)" : "", it.parsed ? " (model's answer)" : ""))));
    } else if (b.type === "judge") {
      sec.appendChild(el("dl", { class: "kv" }, b.items.map(([k, v]) => [el("dt", null, k), el("dd", null, v)])));
    } else if (b.type === "crops") {
      sec.appendChild(el("ul", null, b.items.map((c) => el("li", null, c.label + (c.kept ? " (kept)" : " (dropped)") + " box " + c.box.join(", ")))));
      if (b.notes) sec.appendChild(el("dl", { class: "kv" }, b.notes.map(([k, v]) => [el("dt", null, k), el("dd", null, v)])));
    } else if (b.type === "grid") {
      sec.appendChild(el("p", { class: "legend" }, b.legend.map((s) => el("span", { class: "s-" + s }, s))));
      sec.appendChild(el("div", { class: "grids" }, b.grids.map((g) => {
        const cells = [];
        for (let i = 0; i < b.size * b.size; i++) cells.push(el("div"));
        for (const c of g.cells) {
          const cell = cells[c.r * b.size + c.c];
          if (!cell) continue;
          cell.appendChild(el("span", { class: "s-" + c.status, title: c.status }, c.label));
          cell.appendChild(document.createTextNode(" "));
          cell.className = "s-" + c.status;
        }
        return el("figure", null, el("figcaption", null, g.title), el("div", { class: "grid" }, cells));
      })));
    } else {
      sec.appendChild(el("p", null, b.text || ""));
    }
    return sec;
  }

  // ---------------------------------------------------------------- deep link
  async function followHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    const task = h.get("task"), doc = h.get("doc");
    if (!task || doc === null) return;
    tab("samples");
    const entries = S.manifest.tasks.filter((e) => e.task === task && (h.get("run") === null || String(e.run) === h.get("run")));
    if (!entries.length) { status("no task " + task + " in these runs"); return; }
    $("f-benchmark").value = entries[0].benchmark; fillFilters(); $("f-task").value = task; fillFilters(); refresh();
    const num = /^-?\d+$/.test(doc) ? Number(doc) : doc;
    for (const e of entries) {
      const r = (await findRow(e, num)) || (await findRow(e, doc));
      if (r) { S.revealDetail = true; await openSample(r, true); return; }
    }
    status("no document " + doc + " in " + task);
  }

  // ---------------------------------------------------------------- keys
  // j / ArrowDown: next sample, k / ArrowUp: previous, n / p: next / previous wrong answer (outcome wrong, unparsed
  // or judge failure), all in the list's filter and sort order (compare mode: questions; n / p a question some
  // model answered wrong, opening that answer); Escape: the larger image or a popup closed. Ignored while typing.
  const TYPING = new Set(["checkbox", "radio", "button", "submit", "reset", "file", "color", "range"]);
  function typing(t) {
    if (!t || !t.tagName) return false;
    if (t.isContentEditable || t.tagName === "TEXTAREA" || t.tagName === "SELECT") return true;
    return t.tagName === "INPUT" && !TYPING.has((t.type || "").toLowerCase());
  }
  function onKey(ev) {
    if (ev.key === "Escape") {
      if (!$("lightbox").hidden) $("lightbox").hidden = true;
      else if (!$("popup").hidden) { S.pinned = false; $("popup").hidden = true; }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target) || $("tab-samples").hidden) return;
    const moves = { j: [1, false], ArrowDown: [1, false], k: [-1, false], ArrowUp: [-1, false], n: [1, true], p: [-1, true] };
    const mv = moves[ev.key];
    if (!mv) return;
    ev.preventDefault();
    if (!$("lightbox").hidden) $("lightbox").hidden = true;
    move(mv[0], mv[1]);
  }
  const sampleOf = (item) => (S.viewCompare ? item.first : item);
  function wrongOf(item) {
    const m = S.manifest, bad = (r) => r && WRONG.has(m.outcomes[r.row[1]]);
    if (!S.viewCompare) return bad(item) ? item : null;
    return item.runs.map((i) => item.by[i]).find(bad) || null;
  }
  function move(step, wrong) {
    const list = S.view;
    let i = list.findIndex(isCurrent);
    if (i < 0) i = step > 0 ? -1 : list.length;  // nothing open in this list: from its top (j, n) or its end (k, p)
    for (let j = i + step; j >= 0 && j < list.length; j += step) {
      const r = wrong ? wrongOf(list[j]) : sampleOf(list[j]);
      if (r) { openSample(r); return; }
    }
    status(!list.length ? "no samples in the list" : wrong ? "no " + (step > 0 ? "later" : "earlier") + " wrong answer in the list" : step > 0 ? "last sample of the list" : "first sample of the list");
  }
  // the sticky header's height, for the panes below it (app.css: --head)
  function fitHeader() { document.documentElement.style.setProperty("--head", document.querySelector("header").offsetHeight + "px"); }

  // ---------------------------------------------------------------- figure
  function wrap(ctx, text, width) {
    const out = [];
    for (const para of String(text).split("\n")) {
      let line = "";
      for (const word of para.split(/\s+/)) {
        const t = line ? line + " " + word : word;
        if (ctx.measureText(t).width > width && line) { out.push(line); line = word; } else line = t;
      }
      out.push(line);
    }
    return out;
  }
  // the text the figure wraps for its last six lines: a text over the preview's length from its last m.preview
  // characters (wrapping a prompt of megabytes word by word would take seconds)
  const ending = (t) => (t.length <= S.manifest.preview ? t : t.slice(-S.manifest.preview));
  async function drawFigure() {
    const m = S.manifest, canvas = $("fig-canvas"), ctx = canvas.getContext("2d");
    const items = [];
    for (const q of S.marked.values()) {
      const answers = [];
      let first = null;
      for (const e of m.tasks.filter((e) => e.task === q.task)) {
        const r = await findRow(e, q.doc);
        if (!r) continue;
        first = first || r;
        answers.push([m.runs[e.run].label, r.row[3] || "(unparsed)", m.outcomes[r.row[1]]]);
      }
      if (!first) continue;
      const x = (await loadDetail(first.c))[first.i];
      let img = null;
      if (x.images.length) {
        const url = await loadImage(x.images[0]);
        img = await new Promise((res) => { const im = new Image(); im.onload = () => res(im); im.onerror = () => res(null); im.src = url; });
      }
      const prompt = x.long && x.long.prompt ? await loadText(x.long.prompt[0]) : x.prompt;  // its end: the question
      items.push({ q, first, x, img, answers, prompt });
    }
    const W = 560, pad = 20, cols = Math.max(1, Math.min(3, items.length));
    ctx.font = "15px sans-serif";
    const panels = items.map((it) => {
      const imgH = it.img ? Math.round(W * it.img.height / it.img.width) : 0;
      const question = wrap(ctx, ending(it.prompt).trim() || (it.first.e.prefix + it.first.e.suffix).trim(), W).slice(-6);
      const lines = it.answers.map((a) => a[0] + ": " + a[1]);
      return { it, imgH, question, lines, h: imgH + 24 + question.length * 19 + 10 + (lines.length + 1) * 20 + pad };
    });
    const rows = Math.ceil(panels.length / cols) || 1;
    const rowH = [];
    for (let r = 0; r < rows; r++) rowH.push(Math.max(60, ...panels.slice(r * cols, (r + 1) * cols).map((p) => p.h)));
    canvas.width = cols * (W + pad) + pad; canvas.height = rowH.reduce((a, b) => a + b + pad, pad);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, canvas.width, canvas.height);
    panels.forEach((p, i) => {
      const cx = pad + (i % cols) * (W + pad);
      let y = pad + rowH.slice(0, Math.floor(i / cols)).reduce((a, b) => a + b + pad, 0);
      if (p.it.img) { ctx.drawImage(p.it.img, cx, y, W, p.imgH); y += p.imgH; }
      ctx.fillStyle = "#222"; ctx.font = "bold 14px sans-serif"; ctx.fillText(p.it.q.task + " · doc " + p.it.q.doc, cx, y + 18); y += 24;
      ctx.font = "15px sans-serif";
      for (const l of p.question) { ctx.fillText(l, cx, y + 15); y += 19; }
      y += 10;
      p.it.answers.forEach((a) => {
        ctx.fillStyle = a[2] === "right" ? "#176b2c" : a[2] === "wrong" ? "#b21f1f" : "#8a5a00";
        ctx.fillText((a[2] === "right" ? "✓ " : a[2] === "wrong" ? "✗ " : "? ") + a[0] + ": " + a[1], cx, y + 15); y += 20;
      });
      ctx.fillStyle = "#000"; ctx.font = "bold 15px sans-serif"; ctx.fillText("Ground truth: " + p.it.x.truth, cx, y + 15);
      ctx.font = "15px sans-serif";
    });
    const list = clear($("fig-list"));
    items.forEach((it) => list.appendChild(el("li", null, it.q.task + " · doc " + it.q.doc)));
    return items.length;
  }
  function pdfFromJpeg(jpeg, w, h) {
    // one page, the figure as a DCTDecode image at 72 dpi x 0.75 (a 1px = 0.75pt page)
    const enc = new TextEncoder(), parts = [], offsets = [];
    let length = 0;
    const put = (x) => { const b = typeof x === "string" ? enc.encode(x) : x; parts.push(b); length += b.length; };
    const pw = (w * 0.75).toFixed(2), ph = (h * 0.75).toFixed(2);
    const content = "q " + pw + " 0 0 " + ph + " 0 0 cm /Im0 Do Q";
    put("%PDF-1.4\n%\u00e2\u00e3\n");
    const obj = (n, body) => { offsets[n] = length; put(n + " 0 obj\n"); for (const b of body) put(b); put("\nendobj\n"); };
    obj(1, ["<< /Type /Catalog /Pages 2 0 R >>"]);
    obj(2, ["<< /Type /Pages /Kids [3 0 R] /Count 1 >>"]);
    obj(3, ["<< /Type /Page /Parent 2 0 R /MediaBox [0 0 " + pw + " " + ph + "] /Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>"]);
    obj(4, ["<< /Type /XObject /Subtype /Image /Width " + w + " /Height " + h + " /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode /Length " + jpeg.length + " >>\nstream\n", jpeg, "\nendstream"]);
    obj(5, ["<< /Length " + content.length + " >>\nstream\n" + content + "\nendstream"]);
    const xref = length;
    let table = "xref\n0 6\n0000000000 65535 f \n";
    for (let n = 1; n <= 5; n++) table += String(offsets[n]).padStart(10, "0") + " 00000 n \n";
    put(table + "trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n" + xref + "\n%%EOF\n");
    const out = new Uint8Array(length);
    let at = 0;
    for (const p of parts) { out.set(p, at); at += p.length; }
    return out;
  }
  async function exportFigure(kind) {
    if (!(await drawFigure())) { status("mark a question first"); return; }
    const canvas = $("fig-canvas");
    let blob;
    if (kind === "png") blob = await new Promise((res) => canvas.toBlob(res, "image/png"));
    else {
      const jpeg = await new Promise((res) => canvas.toBlob(res, "image/jpeg", 0.92));
      blob = new Blob([pdfFromJpeg(new Uint8Array(await jpeg.arrayBuffer()), canvas.width, canvas.height)], { type: "application/pdf" });
    }
    const a = $("fig-" + kind + "-link");
    if (a.href) URL.revokeObjectURL(a.href);
    a.href = URL.createObjectURL(blob); a.hidden = false; a.dataset.bytes = String(blob.size);
    window.LMMSView.exported[kind] = blob;
    a.click();
  }

  // ---------------------------------------------------------------- start
  function tab(name) {
    for (const b of document.querySelectorAll("nav button")) b.classList.toggle("on", b.dataset.tab === name);
    for (const s of ["tables", "samples", "figure"]) $("tab-" + s).hidden = s !== name;
    if (name === "samples" && !S.started) { S.started = true; refresh(); }
    if (name === "figure") drawFigure();
  }
  function start() {
    const m = S.manifest;
    renderTables();
    fillFilters();
    status(m.samples + " samples in " + m.tasks.length + " run tasks" + (m.skipped ? "; " + lineCount(m.skipped) + " skipped (not samples)" : ""));
    for (const b of document.querySelectorAll("nav button")) b.addEventListener("click", () => tab(b.dataset.tab));
    for (const id of ["f-benchmark", "f-task", "f-run"]) $(id).addEventListener("change", () => { fillFilters(); S.started = true; refresh(); });
    for (const id of ["f-category", "f-outcome", "f-compare"]) $(id).addEventListener("change", () => { S.started = true; refresh(); });
    $("f-sort").addEventListener("change", () => renderList(true));
    let timer = null;
    $("f-text").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { S.started = true; refresh(); }, 250); });
    $("filters").addEventListener("submit", (ev) => ev.preventDefault());
    $("prev").addEventListener("click", () => { S.page--; renderList(true); });
    $("next").addEventListener("click", () => { S.page++; renderList(true); });
    $("lightbox").addEventListener("click", () => { $("lightbox").hidden = true; });
    document.addEventListener("click", () => { if (S.pinned) { S.pinned = false; $("popup").hidden = true; } });
    $("fig-draw").addEventListener("click", drawFigure);
    $("fig-png").addEventListener("click", () => exportFigure("png"));
    $("fig-pdf").addEventListener("click", () => exportFigure("pdf"));
    $("fig-clear").addEventListener("click", () => { S.marked.clear(); $("marked-count").textContent = "0"; drawFigure(); });
    document.addEventListener("keydown", onKey);
    fitHeader();
    window.addEventListener("resize", fitHeader);
    window.addEventListener("hashchange", followHash);
    if (location.hash.length > 1) followHash();
    document.body.dataset.ready = "1";
  }
})();
