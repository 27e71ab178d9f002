"""The explorer's single page: one HTML file with its script and style inlined (no external files, nothing
fetched from the internet).

Generations hold arbitrary text (HTML, `</script>`, control characters). The script never puts data into
`innerHTML`: every value goes in through `textContent` or an attribute, so the browser shows it as text.
The configuration JSON embedded in the page has `<`, `>` and `&` written as \\u escapes, so no value can
close the script element.

Data comes from `api/...` JSON requests when served (`lmaudit explore --serve`), or from `data/*.js` files
when written to a folder: browsers refuse `fetch()` on file:// pages, so each static data file is a script
that hands its object to `lmx(key, data)`.
"""

from __future__ import annotations

import json

STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#23395d;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:baseline}
header a{color:#fff}
main{padding:12px 16px}
table{border-collapse:collapse;font-size:13px;background:#fff}
td,th{border:1px solid #d8d8d8;padding:3px 7px;vertical-align:top}
th{background:#eef1f6;text-align:left}
th.sortable{cursor:pointer;text-decoration:underline dotted}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.preview{max-width:560px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-family:monospace}
form.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:end;margin:8px 0;font-size:13px}
form.filters label{display:flex;flex-direction:column}
.pager{margin:8px 0;display:flex;gap:8px;align-items:center;font-size:13px}
.note{color:#666;font-size:12px}
.gen{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:16px}
.box{background:#fff;border:1px solid #d8d8d8;border-radius:4px;padding:10px;margin-bottom:12px}
.text{white-space:pre-wrap;font-family:monospace;font-size:13px;line-height:1.6;word-break:break-word}
mark.seg{cursor:pointer;border-radius:2px;color:inherit}
mark.seg.sel{outline:2px solid #d62728}
.span-item{cursor:pointer}
.span-item.sel{background:#ffe9a8}
.doc{border-top:1px solid #ddd;padding:8px 0}
.doc .window{white-space:pre-wrap;font-family:monospace;font-size:12px;background:#f6f6f6;padding:6px;
  max-height:280px;overflow:auto;word-break:break-word}
.doc mark{background:#ffd24d}
.tier{font-weight:bold}
.facts span{margin-right:14px;font-size:13px}
"""

SCRIPT = r"""
'use strict';
const CFG = JSON.parse(document.getElementById('lmx-config').textContent);
const app = document.getElementById('app');

// ---- data: JSON requests when served, script files when static ----------------------------------
const waiting = {};
window.lmx = (key, data) => { const w = waiting[key]; if (w) { delete waiting[key]; w.resolve(data); } };
function loadScript(key) {
  return new Promise((resolve, reject) => {
    waiting[key] = {resolve};
    const s = document.createElement('script');
    s.src = 'data/' + key + '.js';
    s.onerror = () => { delete waiting[key]; reject(new Error('missing data file data/' + key + '.js')); };
    s.onload = () => s.remove();
    document.head.appendChild(s);
  });
}
async function getJSON(url) {
  const r = await fetch(url);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || (url + ': HTTP ' + r.status));
  return body;
}
const served = CFG.mode === 'served';
let RUNS = null;
async function runsInfo() {
  if (!RUNS) RUNS = served ? await getJSON('api/runs') : await loadScript('runs');
  return RUNS;
}
async function generationsPage(q) {
  if (served) return getJSON('api/generations?' + new URLSearchParams(q));
  const info = await runsInfo();
  const ix = info.runs.findIndex(r => r.run_id === q.run);
  const sort = info.static_sorts.includes(q.sort) ? q.sort : info.static_sorts[0];
  return loadScript('pages/' + (ix < 0 ? 'all' : ix) + '/' + sort + '/' + (q.page || 0));
}
const bundles = {};
async function generationDetail(id, bundle) {
  if (served) return getJSON('api/generation?id=' + encodeURIComponent(id));
  if (!bundles[bundle]) bundles[bundle] = await loadScript('gen/' + bundle);
  const g = bundles[bundle][id];
  if (!g) throw new Error('generation ' + id + ' is not in this export');
  return g;
}
async function spanDocuments(spanId, gen) {
  if (served) return getJSON('api/span?id=' + encodeURIComponent(spanId));
  const span = gen.spans.find(s => s.span_id === spanId);
  const t = gen.documents[spanId] || {c: [], r: []};  // columns once, one value list per document
  return {span, documents: t.r.map(v => Object.fromEntries(t.c.map((c, i) => [c, v[i]])))};
}

// ---- DOM helpers: text only, never innerHTML ------------------------------------------------------
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'onclick' || k === 'onchange' || k === 'onsubmit') e[k] = v; else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined) continue;
    e.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}
function fmt(v, digits) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'number' && !Number.isInteger(v)) return v.toFixed(digits === undefined ? 3 : digits);
  return String(v);
}
function link(hash, text) { return el('a', {href: '#' + hash}, text); }
function shortModel(m) {
  if (!m) return '';
  const parts = String(m).split('/').filter(Boolean);
  const last = parts[parts.length - 1] || m;
  return (last === 'model' && parts.length > 1) ? parts[parts.length - 2] : last;
}
function parseHash() {
  const h = location.hash.replace(/^#/, '') || '/';
  const [path, qs] = h.split('?');
  return {path: path.split('/').filter(Boolean).map(decodeURIComponent), q: Object.fromEntries(new URLSearchParams(qs || ''))};
}
function hashFor(path, q) {
  const qs = new URLSearchParams(Object.entries(q).filter(([, v]) => v !== '' && v !== null && v !== undefined));
  return path + (qs.toString() ? '?' + qs : '');
}
function fill(node, ...kids) {  // replaceChildren, with arrays flattened and nulls dropped
  node.replaceChildren(...kids.flat(2).filter(k => k !== null && k !== undefined));
}
function show(...kids) { fill(app, ...kids); }
function fail(e) { show(el('p', {class: 'error'}, 'error: ' + e.message)); }

// ---- runs -----------------------------------------------------------------------------------------
async function viewRuns() {
  const info = await runsInfo();
  const cols = ['run_id', 'model', 'setting', 'purpose', 'n_generations', 'n_traced', ...info.headline];
  const head = el('tr', {}, cols.map(c => el('th', {}, c)));
  const rows = info.runs.map(r => el('tr', {},
    el('td', {}, link(hashFor('/gens', {run: r.run_id}), r.run_id)),
    el('td', {title: r.model}, shortModel(r.model)), el('td', {}, r.setting), el('td', {}, r.purpose),
    el('td', {class: 'num'}, fmt(r.n_generations)), el('td', {class: 'num'}, fmt(r.n_traced)),
    info.headline.map(m => el('td', {class: 'num'}, typeof r[m] === 'number' ? r[m].toFixed(m === 'als' ? 1 : 3) : ''))));
  show(el('h2', {}, 'Runs'),
       el('p', {class: 'note'}, 'Headline metrics from fct_setting_metrics (empty: not a traced PropMe run). ',
          link('/gens', 'All generations')),
       el('table', {id: 'runs'}, el('thead', {}, head), el('tbody', {}, rows)));
}

// ---- the generations table --------------------------------------------------------------------------
const GEN_COLS = [['position', '#'], ['run_id', 'run'], ['setting', 'setting'], ['longest_span', 'longest span'],
  ['nv_recall', 'nv-recall'], ['full_match', 'full match'], ['domain', 'domain'], ['n_tokens', 'tokens'],
  ['n_spans', 'spans'], [null, 'text']];
async function viewGenerations(q) {
  const info = await runsInfo();
  q = Object.assign({sort: 'longest_span', desc: '1', page: '0', size: String(CFG.page_size)}, q);
  if (!served) q.desc = info.static_desc[q.sort] || '1';  // static pages come in one direction per sort
  const page = await generationsPage(q);
  const go = (changes) => { location.hash = hashFor('/gens', Object.assign({}, q, {page: '0'}, changes)); };
  const form = el('form', {class: 'filters', id: 'filters'});
  const sel = (name, label, values) => el('label', {}, label, el('select', {name},
    el('option', {value: ''}, 'any'), values.map(v => { const o = el('option', {value: v}, v); if (String(q[name] || '') === v) o.selected = true; return o; })));
  const num = (name, label, step) => el('label', {}, label, el('input', {name, type: 'number', step, min: 0, value: q[name] || '', style: 'width:7em'}));
  form.append(sel('run', 'run', info.runs.map(r => r.run_id)));
  if (served) {
    form.append(sel('setting', 'setting', info.facets.settings), sel('domain', 'domain', info.facets.domains),
                sel('full', 'full match', ['yes', 'no']),
                sel('document_set', 'document set', info.facets.document_sets || []),
                num('min_longest', 'longest span >=', '1'),
                num('min_nvr', 'nv-recall >=', '0.05'));
  }
  form.append(el('button', {type: 'submit'}, 'apply'));
  form.onsubmit = (ev) => { ev.preventDefault(); const f = new FormData(form); const ch = {};
    for (const [k, v] of f.entries()) ch[k] = v; go(ch); };
  const head = el('tr', {}, GEN_COLS.map(([key, label]) => {
    if (!key || (!served && !info.static_sorts.includes(key))) return el('th', {}, label);
    const active = q.sort === key;
    const desc = served ? (active && q.desc === '1' ? '0' : '1') : info.static_desc[key];
    return el('th', {class: 'sortable', 'data-sort': key, onclick: () => go({sort: key, desc})},
              label + (active ? (q.desc === '1' ? ' \u25bc' : ' \u25b2') : ''));
  }));
  const rows = page.rows.map(r => el('tr', {'data-generation': r.generation_id},
    el('td', {class: 'num'}, link(hashFor('/gen/' + encodeURIComponent(r.generation_id), {b: r.bundle}), String(r.ordinal))),
    el('td', {}, r.run_id), el('td', {}, r.setting), el('td', {class: 'num'}, fmt(r.longest_span)),
    el('td', {class: 'num'}, fmt(r.nv_recall)), el('td', {}, fmt(r.full_match)), el('td', {}, fmt(r.domain)),
    el('td', {class: 'num'}, fmt(r.n_tokens)), el('td', {class: 'num'}, fmt(r.n_spans)),
    el('td', {class: 'preview', title: r.preview}, r.preview)));
  const pages = Math.max(1, Math.ceil(page.total / page.size));
  const pg = Number(q.page);
  const pager = el('div', {class: 'pager'},
    el('button', {disabled: pg <= 0 ? 'disabled' : null, onclick: () => go({page: String(pg - 1)})}, 'previous'),
    el('span', {id: 'page-info'}, `page ${pg + 1} of ${pages} (${page.total} generations)`),
    el('button', {disabled: pg + 1 >= pages ? 'disabled' : null, onclick: () => go({page: String(pg + 1)})}, 'next'));
  show(el('h2', {}, 'Generations'), form,
       served ? null : el('p', {class: 'note'}, 'Static export: sorted pages per run; for every filter run `lmaudit explore --serve`.'),
       pager, el('table', {id: 'generations'}, el('thead', {}, head), el('tbody', {}, rows)));
}

// ---- one generation -------------------------------------------------------------------------------
let GEN = null, SELECTED = null;
async function viewGeneration(id, q) {
  const g = await generationDetail(id, q.b);
  GEN = g; SELECTED = null;
  const facts = el('div', {class: 'facts'},
    ['run_id', 'setting', 'sample_idx', 'n_tokens', 'longest_span', 'nv_recall', 'full_match', 'domain'].map(k =>
      el('span', {}, el('b', {}, k.replace(/_/g, ' ') + ': '), fmt(g[k]))));
  const colorBy = el('select', {id: 'color-by', onchange: () => paint()},
    el('option', {value: 'length'}, 'span length'), el('option', {value: 'rarity'}, 'rarity (unigram log-prob)'));
  const text = el('div', {class: 'text', id: 'gen-text'});
  for (const seg of g.segments) {
    const piece = g.text.slice(seg.start, seg.end);
    if (!seg.spans.length) { text.append(document.createTextNode(piece)); continue; }
    text.append(el('mark', {class: 'seg', 'data-spans': seg.spans.join(' '),
      onclick: () => selectSpan(topSpan(seg.spans))}, piece));
  }
  const spanRows = g.spans.map(s => el('tr', {class: 'span-item', 'data-span': s.span_id, onclick: () => selectSpan(s.span_id)},
    el('td', {class: 'num'}, s.length), el('td', {class: 'num'}, fmt(s.count)), el('td', {class: 'num'}, s.n_docs),
    el('td', {}, [s.is_full ? 'full' : null, s.kept ? 'kept' : null, s.merged ? 'merged' : null].filter(Boolean).join(', ')),
    el('td', {class: 'preview', title: s.text}, s.char_start === null ? '(not placed) ' + s.text : s.text)));
  const spanTable = el('table', {id: 'spans'}, el('thead', {}, el('tr', {},
    ['tokens', 'corpus count', 'docs', 'kind', 'text'].map(c => el('th', {}, c)))), el('tbody', {}, spanRows));
  show(el('p', {}, link('/gens?run=' + encodeURIComponent(g.run_id), '\u2190 generations of ' + g.run_id)),
       el('h2', {}, 'Generation ' + g.generation_id), facts,
       el('div', {class: 'gen'},
         el('div', {},
           g.prompt !== null && g.prompt !== undefined ? el('div', {class: 'box'}, el('h3', {}, 'Prompt'), el('div', {class: 'text', id: 'prompt'}, g.prompt)) : null,
           el('div', {class: 'box'}, el('h3', {}, 'Generation'), el('p', {class: 'note'}, 'Highlighted: spans found in the training corpus; colour by ', colorBy, '. Click a span.'), text),
           el('div', {class: 'box'}, el('h3', {}, 'Spans (' + g.spans.length + ')'), spanTable)),
         el('div', {class: 'box', id: 'docs'}, el('h3', {}, 'Documents'), el('p', {class: 'note'}, 'Select a span to see the training documents retrieved for it.'))));
  paint();
}
function spanById(id) { return GEN.spans.find(s => s.span_id === id); }
function topSpan(ids) {
  const by = document.getElementById('color-by').value;
  const key = by === 'rarity' ? (s => -(s.unigram_logprob ?? 0)) : (s => s.length);
  return ids.map(spanById).sort((a, b) => key(b) - key(a))[0].span_id;
}
function paint() {
  const by = document.getElementById('color-by').value;
  const vals = GEN.spans.map(s => by === 'rarity' ? -(s.unigram_logprob ?? 0) : s.length);
  const hi = Math.max(1, ...vals);
  for (const m of document.querySelectorAll('mark.seg')) {
    const s = spanById(topSpan(m.dataset.spans.split(' ')));
    const v = by === 'rarity' ? -(s.unigram_logprob ?? 0) : s.length;
    const a = by === 'rarity' ? v / hi : Math.min(1, v / 50);
    m.style.background = `rgba(31, 119, 180, ${(0.12 + 0.6 * a).toFixed(3)})`;
    m.title = s.length + ' tokens, corpus count ' + fmt(s.count);
  }
}
async function selectSpan(spanId) {
  SELECTED = spanId;
  for (const e of document.querySelectorAll('.span-item')) e.classList.toggle('sel', e.dataset.span === spanId);
  for (const m of document.querySelectorAll('mark.seg')) m.classList.toggle('sel', m.dataset.spans.split(' ').includes(spanId));
  const panel = document.getElementById('docs');
  fill(panel, el('h3', {}, 'Documents'), el('p', {class: 'note'}, 'loading...'));
  let res;
  try { res = await spanDocuments(spanId, GEN); } catch (e) { fill(panel, el('h3', {}, 'Documents'), el('p', {}, 'error: ' + e.message)); return; }
  if (SELECTED !== spanId) return;  // another span was selected meanwhile
  const s = res.span, counts = spanById(spanId) || {};
  const docs = res.documents.map(d => {
    const win = el('div', {class: 'window'});
    if (d.window_text === null || d.window_text === undefined) win.append('(no window stored)');
    else if (d.match_start === null || d.match_start === undefined) win.append(d.window_text);
    else win.append(d.window_text.slice(0, d.match_start), el('mark', {}, d.window_text.slice(d.match_start, d.match_end)), d.window_text.slice(d.match_end));
    let meta = d.metadata;
    try { meta = JSON.stringify(JSON.parse(d.metadata), null, 1); } catch (e) { /* shown as stored */ }
    return el('div', {class: 'doc'},
      el('div', {}, el('span', {class: 'tier'}, d.match_tier || ''), ' \u00b7 nv-recall ', fmt(d.nv_recall),
         d.nv_matched_words !== null && d.nv_matched_words !== undefined ? ` (${d.nv_matched_words}/${d.nv_generation_words} words)` : '',
         ' \u00b7 domain ', el('b', {class: 'domain'}, fmt(d.domain) || 'unknown')),
      el('div', {class: 'note'}, 'document ', fmt(d.doc_id) || '?', ' \u00b7 source ', fmt(d.source) || '?', ' \u00b7 shard ', fmt(d.shard), ' doc ', fmt(d.doc_ix)),
      win,
      meta ? el('details', {}, el('summary', {}, 'metadata'), el('pre', {}, meta)) : null);
  });
  fill(panel, el('h3', {}, 'Documents'),
    el('div', {class: 'facts', id: 'span-facts'},
      el('span', {}, el('b', {}, 'span: '), s.length + ' tokens'),
      el('span', {}, el('b', {}, 'corpus count: '), fmt(s.count)),
      counts.first50_count !== null && counts.first50_count !== undefined ? el('span', {}, el('b', {}, 'first-50 count: '), fmt(counts.first50_count)) : null,
      el('span', {}, el('b', {}, 'documents: '), String(res.documents.length))),
    el('div', {class: 'text', id: 'span-text'}, s.text),
    docs.length ? docs : el('p', {class: 'note'}, 'No documents were retrieved for this span (the tracer retrieves them for the kept rare spans).'));
  for (const w of panel.querySelectorAll('.window')) {  // show each matched window, not the window's start
    const m = w.querySelector('mark');
    if (m) w.scrollTop = Math.max(0, m.offsetTop - w.offsetTop - 40);
  }
}

// ---- routing ----------------------------------------------------------------------------------------
async function route() {
  const {path, q} = parseHash();
  delete app.dataset.ready;
  try {
    if (path[0] === 'gens') await viewGenerations(q);
    else if (path[0] === 'gen' && path[1]) await viewGeneration(path[1], q);
    else await viewRuns();
  } catch (e) { fail(e); }
  app.dataset.ready = location.hash || '#/';  // the view of this hash is drawn (tests wait for it)
}
window.addEventListener('hashchange', route);
route();
"""


def _script_safe_json(obj) -> str:
    """JSON that can sit inside a <script> element: no value can write `</script>` or `<!--`."""
    return json.dumps(obj).replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render_page(mode: str, title: str, page_size: int = 50) -> str:
    """The whole page. `mode` is "served" (JSON requests) or "static" (data/*.js files)."""
    import html

    cfg = _script_safe_json({"mode": mode, "page_size": page_size})
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><title>{html.escape(title)}</title><style>{STYLE}</style></head>
<body><header><b><a href="#/">lmaudit trace explorer</a></b><span>{html.escape(title)}</span></header>
<main id="app"><p>loading...</p></main>
<script type="application/json" id="lmx-config">{cfg}</script>
<script>{SCRIPT}</script></body></html>"""


def data_script(key: str, data) -> str:
    """A static data file: a script that hands `data` to the page's `lmx(key, data)`."""
    return f"lmx({_script_safe_json(key)}, {_script_safe_json(data)});\n"
