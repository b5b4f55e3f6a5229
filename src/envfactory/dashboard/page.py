"""The dashboard's two pages: HTML, CSS and plain JavaScript, nothing fetched from elsewhere.

The pages draw everything from the ``/api`` routes (and fetch them again every few seconds);
charts are inline SVG drawn by ``lineChart`` below. Text from the records is only ever set as
``textContent``, never parsed as HTML.
"""

from __future__ import annotations

STYLE = """
:root { --fg:#1d2330; --muted:#5f6b7a; --line:#d9dee5; --bg:#f6f7f9; --card:#fff;
  --ok:#1a7f37; --bad:#b42318; --warn:#b54708; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color:var(--fg); background:var(--bg); }
header { display:flex; align-items:baseline; gap:16px; padding:14px 24px; background:#1d2330;
  color:#fff; }
header h1 { font-size:18px; margin:0; }
header a { color:#cfe0ff; }
#status { color:#b8c2d0; font-size:12px; }
main { padding:16px 24px 40px; }
section { margin-bottom:26px; }
h2 { font-size:16px; margin:0 0 10px; }
h3 { font-size:15px; margin:0 0 6px; }
.side { display:flex; flex-wrap:wrap; gap:16px; align-items:flex-start; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px;
  padding:12px 14px; min-width:260px; }
.muted { color:var(--muted); font-size:12px; }
.big { font-size:22px; font-weight:600; }
.kv { display:grid; grid-template-columns:max-content auto; gap:2px 14px; margin:8px 0; }
.kv dt { color:var(--muted); } .kv dd { margin:0; font-variant-numeric:tabular-nums; }
.status { display:inline-block; border-radius:10px; padding:1px 8px; margin:2px 4px 2px 0;
  background:#eef1f5; font-size:12px; }
.status b { font-variant-numeric:tabular-nums; }
.status.zero { opacity:.45; }
.status[data-status=completed] { background:#e3f4e8; }
.status[data-status=truncated] { background:#fff4db; }
.status[data-status=timeout], .status[data-status=env_error],
.status[data-status=infra_error] { background:#fde7e5; }
table { border-collapse:collapse; background:var(--card); }
th, td { border:1px solid var(--line); padding:4px 8px; text-align:right;
  font-variant-numeric:tabular-nums; vertical-align:top; }
th { background:#eef1f5; font-weight:600; }
td.l, th.l { text-align:left; }
table.matrix td.cell { cursor:pointer; min-width:86px; }
table.matrix td.cell .r { font-weight:600; }
table.matrix td.cell .s { color:var(--muted); font-size:11px; }
table.matrix tr.all td { font-weight:600; }
.controls { display:flex; gap:12px; align-items:center; margin-bottom:8px; flex-wrap:wrap; }
.chart text { font-size:11px; fill:#5f6b7a; }
.chart .title { font-size:13px; fill:#1d2330; font-weight:600; }
a { color:#1f5fbf; }
.msg { background:var(--card); border:1px solid var(--line); border-left:4px solid #9aa5b4;
  border-radius:6px; padding:8px 10px; margin:8px 0; max-width:1100px; }
.msg .who { font-weight:600; font-size:12px; color:var(--muted); }
.msg .who .role { text-transform:uppercase; }
.msg .who .what { font-family:ui-monospace, monospace; }
.msg.role-user { border-left-color:#1f5fbf; }
.msg.role-assistant { border-left-color:#7a3fbf; }
.msg.role-tool { border-left-color:#1a7f37; margin-left:28px; }
.msg.role-system { border-left-color:#9aa5b4; }
td.action { max-width:420px; }
pre { white-space:pre-wrap; word-break:break-word; margin:4px 0; font:12px/1.4 ui-monospace,
  SFMono-Regular, Menlo, monospace; }
.toolcall { background:#f4effb; border-radius:4px; padding:4px 8px; margin-top:6px; }
.toolcall .name { font-family:ui-monospace, monospace; font-weight:600; }
tr.fail td { background:#fdf1f0; } tr.pass td { background:#f0f9f2; }
tr.changed td { background:#fff8e6; }
.err { color:var(--bad); }
details > summary { cursor:pointer; color:var(--muted); }
"""

SCRIPT = r"""
const CONFIG = JSON.parse(document.getElementById('config').textContent);
const COLORS = ['#1f5fbf', '#c2410c', '#15803d', '#7c3aed', '#be185d', '#0e7490', '#a16207',
  '#4b5563'];
const STATUSES = ['completed', 'truncated', 'timeout', 'env_error', 'infra_error'];
const SVG = 'http://www.w3.org/2000/svg';

function el(tag, attrs, ...kids) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === 'class') node.className = v;
    else if (k === 'onclick') node.addEventListener('click', v);
    else node.setAttribute(k, v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined) continue;
    node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return node;
}
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}
function fmt(x, d = 3) { return x === null || x === undefined ? '–' : Number(x).toFixed(d); }
function pct(x) { return x === null || x === undefined ? '–' : Math.round(100 * x) + '%'; }
function when(t) { return t ? new Date(t * 1000).toLocaleTimeString() : '–'; }
function secs(s) {
  if (s === null || s === undefined) return '–';
  if (s > 0 && s < 1) return +(s * 1000).toPrecision(3) + ' ms';
  if (s < 120) return (+s.toFixed(s < 10 ? 2 : 1)) + ' s';
  if (s < 7200) return (s / 60).toFixed(1) + ' min';
  return (s / 3600).toFixed(1) + ' h';
}
async function api(path) {
  const res = await fetch(path, {credentials: 'same-origin', cache: 'no-store'});
  if (!res.ok) throw new Error(path + ': ' + res.status + ' ' + (await res.text()));
  return res.json();
}
function kv(pairs) {
  const dl = el('dl', {class: 'kv'});
  for (const [k, v] of pairs) dl.append(el('dt', {}, k), el('dd', {'data-key': k}, v));
  return dl;
}
function ticks(lo, hi, n) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(s => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(+v.toFixed(10));
  return out;
}

// A line chart: series [{name, color, points: [[x, y], ...]}], y in [ylo, yhi].
function lineChart(title, series, opts) {
  const rows = Math.ceil(series.length / 3);
  const W = opts.width || 560, H = (opts.height || 250) + 14 * rows, L = 46, R = 12, B = 38;
  const T = 30 + 14 * rows;
  const all = series.flatMap(s => s.points);
  const xs = all.map(p => p[0]);
  const xlo = opts.xlo !== undefined ? opts.xlo : (xs.length ? Math.min(...xs) : 0);
  let xhi = xs.length ? Math.max(...xs) : 1;
  if (!(xhi > xlo)) xhi = xlo + 1;
  const ylo = opts.ylo, yhi = opts.yhi;
  const X = x => L + (x - xlo) / (xhi - xlo) * (W - L - R);
  const Y = y => T + (1 - (y - ylo) / (yhi - ylo)) * (H - T - B);
  const root = svg('svg', {width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: 'chart',
    'data-title': title});
  root.append(svg('text', {x: L, y: 16, class: 'title'}, title));
  for (const v of (opts.yticks || ticks(ylo, yhi, 4))) {
    root.append(svg('line', {x1: L, x2: W - R, y1: Y(v), y2: Y(v), stroke: '#e5e8ec'}));
    root.append(svg('text', {x: L - 6, y: Y(v) + 4, 'text-anchor': 'end'},
      opts.yfmt ? opts.yfmt(v) : v));
  }
  for (const v of ticks(xlo, xhi, 5)) {
    root.append(svg('line', {x1: X(v), x2: X(v), y1: H - B, y2: H - B + 4, stroke: '#9aa5b4'}));
    root.append(svg('text', {x: X(v), y: H - B + 16, 'text-anchor': 'middle'},
      opts.xfmt ? opts.xfmt(v) : v));
  }
  root.append(svg('line', {x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: '#9aa5b4'}));
  root.append(svg('text', {x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle'},
    opts.xlabel || ''));
  series.forEach((s, i) => {
    const pts = s.points.map(p => `${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join(' ');
    const attrs = {points: pts, fill: 'none', stroke: s.color, 'stroke-width': 2,
      'data-run': s.name, 'data-points': s.points.length};
    if (s.step) attrs['stroke-linejoin'] = 'miter';
    root.append(svg('polyline', attrs));
    if (s.points.length === 1) {
      root.append(svg('circle', {cx: X(s.points[0][0]), cy: Y(s.points[0][1]), r: 3,
        fill: s.color}));
    }
    const lx = L + (i % 3) * 170, ly = 32 + Math.floor(i / 3) * 14;
    root.append(svg('rect', {x: lx, y: ly - 8, width: 10, height: 10, fill: s.color}));
    root.append(svg('text', {x: lx + 14, y: ly + 1}, s.name));
  });
  return root;
}

function failed(err) {
  const box = document.getElementById('status');
  if (box) { box.textContent = 'error: ' + err.message; box.classList.add('err'); }
}
"""

OVERVIEW_SCRIPT = r"""
const state = {x: 'time', window: 20, run: 0, env: '', difficulty: '', status: ''};
let lastOverview = null;

function runCard(run, color) {
  const chips = el('div', {class: 'statuses'});
  for (const [s, n] of Object.entries(run.status_counts)) {
    chips.append(el('span', {class: 'status' + (n ? '' : ' zero'), 'data-status': s,
      'data-run': run.name}, s + ' ', el('b', {}, n)));
  }
  const style = `border-top:4px solid ${color}`;
  return el('div', {class: 'card run', 'data-run': run.name, style},
    el('h3', {}, run.name),
    el('div', {class: 'muted'}, run.path),
    el('div', {class: 'big', 'data-key': 'reward_mean'}, fmt(run.reward_mean)),
    el('div', {class: 'muted'}, 'mean reward over scored episodes'),
    kv([['policy', run.policy || '–'], ['kind', run.kind], ['episodes', run.episodes],
        ['scored', run.scored], ['success', pct(run.success_rate)],
        ['last episode', when(run.last_episode_at)]]),
    chips,
    run.skipped_lines ?
      el('div', {class: 'err'}, run.skipped_lines + ' unreadable lines skipped') : null);
}

function held(h) {
  return h ? `${pct(h.success)} [${pct(h.ci95[0])}, ${pct(h.ci95[1])}]` : '–';
}

// A training run: step of steps, held-out success before and after, pooled and per world.
function trainingCard(t, color) {
  const card = el('div', {class: 'card training', 'data-training': t.name,
    'data-state': t.state, style: `border-top:4px solid ${color}`},
    el('h3', {}, t.name), el('div', {class: 'muted'}, t.path));
  if (t.error) { card.append(el('div', {class: 'err'}, t.error)); return card; }
  const last = t.curve.length ? t.curve[t.curve.length - 1].reward : null;
  const names = ws => ws.length > 3 ? `${ws.length} worlds` : ws.join(', ');
  card.append(el('div', {class: 'big', 'data-key': 'step'}, `step ${t.step} of ${t.steps}`),
    el('div', {class: 'muted'}, t.state === 'ended' ? `ended, ${t.minutes} min in all` :
      'training: after is judged when the run ends'),
    kv([['model', t.model || 'embedded'], ['trained on', names(t.train_worlds)],
        ['judged on', names(t.eval_worlds)], ['last reward', fmt(last)],
        ['updated', when(t.updated)]]));
  if (!t.before) return card;
  const table = el('table', {class: 'heldout', 'data-training': t.name}, el('tr', {},
    ['test success (95% CI)', 'level', 'tasks', 'before', 'after', 'change (points)']
      .map((h, i) => el('th', {class: i ? '' : 'l'}, h))));
  const row = (label, b, a, cls) => el('tr', {class: cls, 'data-world': label},
    el('td', {class: 'l'}, label), el('td', {}, b.difficulty ?? '–'), el('td', {}, b.tasks),
    el('td', {'data-key': 'before'}, held(b)), el('td', {'data-key': 'after'}, held(a)),
    el('td', {'data-key': 'change'}, a ? (a.success >= b.success ? '+' : '−') +
      Math.round(100 * Math.abs(a.success - b.success)) + ' pts' : '–'));
  const after = t.after || {pooled: null, per_world: {}};
  table.append(row('pooled', t.before.pooled, after.pooled, 'all'));
  for (const [w, b] of Object.entries(t.before.per_world)) {
    table.append(row(w, b, after.per_world[w], ''));
  }
  card.append(table, el('div', {class: 'muted', 'data-key': 'separated'},
    t.separated === null ? 'separated: once the run ends' : t.separated ?
      'separated: after\'s interval lies above before\'s' :
      'not separated: the intervals overlap (or after is lower)'));
  return card;
}

function trainingChart(trainings) {
  const series = trainings.map((t, i) => ({name: t.name, color: COLORS[i % COLORS.length],
    points: t.curve.map(p => [p.step, p.reward])}));
  return lineChart('training reward by GRPO step (mean of the step\'s episodes)', series,
    {ylo: 0, yhi: 1, xlo: 0, yticks: [0, 0.25, 0.5, 0.75, 1], xlabel: 'GRPO step'});
}

function charts(runs) {
  const box = el('div', {class: 'side'});
  const byTime = state.x === 'time';
  const series = key => runs.map((run, i) => ({
    name: run.name, color: COLORS[i % COLORS.length],
    points: run.curves.points.filter(p => !byTime || p.t !== null)
      .map(p => [byTime ? p.t : p.n, p[key]]),
  }));
  const opts = {ylo: 0, yhi: 1, xlo: 0, yticks: [0, 0.25, 0.5, 0.75, 1],
    xlabel: byTime ? 'time since the run started' : 'scored episodes',
    xfmt: byTime ? secs : (v => v)};
  const w = runs.length ? runs[0].curves.window : state.window;
  box.append(lineChart(`reward (mean of the latest ${w})`, series('reward'), opts));
  box.append(lineChart(`success rate (latest ${w})`, series('success'),
    {...opts, yfmt: v => Math.round(v * 100) + '%'}));
  return box;
}

function matrix(run) {
  const levels = [...new Set(run.cells.map(c => c.difficulty))].sort((a, b) => a - b);
  const envs = [...new Set(run.cells.map(c => c.env))].sort();
  const at = new Map(run.cells.map(c => [c.env + '\u0000' + c.difficulty, c]));
  const head = el('tr', {}, el('th', {class: 'l'}, 'world \\ difficulty'),
    levels.map(d => el('th', {}, d)));
  const table = el('table', {class: 'matrix', id: 'cells-' + run.id, 'data-run': run.name},
    el('thead', {}, head));
  const body = el('tbody');
  for (const env of envs) {
    const tr = el('tr', {'data-env': env}, el('th', {class: 'l'}, env));
    for (const d of levels) {
      const c = at.get(env + '\u0000' + d);
      if (!c) { tr.append(el('td', {})); continue; }
      const shade = c.reward_mean === null ? '#fff' :
        `hsl(${Math.round(120 * c.reward_mean)}, 55%, 93%)`;
      const title = Object.entries(c.status_counts).filter(([, n]) => n)
        .map(([s, n]) => `${s} ${n}`).join(', ');
      tr.append(el('td', {class: 'cell', style: `background:${shade}`, title,
        'data-env': env, 'data-difficulty': d, 'data-episodes': c.episodes,
        'data-scored': c.scored, 'data-reward': fmt(c.reward_mean),
        'data-success': c.success_rate === null ? '' : c.success_rate.toFixed(4),
        onclick: () => pick(run.id, env, d)},
        el('div', {class: 'r'}, fmt(c.reward_mean)),
        el('div', {class: 's'}, `${pct(c.success_rate)} · ${c.episodes} ep`)));
    }
    body.append(tr);
  }
  body.append(el('tr', {class: 'all'}, el('th', {class: 'l'}, 'all'),
    el('td', {colspan: Math.max(1, levels.length), 'data-key': 'all'},
      `reward ${fmt(run.reward_mean)} · success ${pct(run.success_rate)} · ` +
      `${run.episodes} episodes`)));
  table.append(body);
  return el('div', {class: 'card'}, el('h3', {}, run.name), table,
    el('div', {class: 'muted'}, 'cell: mean reward, success rate, episodes (click: list them)'));
}

function roundsTable(run) {
  const t = el('table', {class: 'rounds', 'data-run': run.name}, el('tr', {},
    ['round', 'world', 'levels drawn', 'episodes', 'reward', 'success'].map(h => el('th', {}, h))));
  for (const r of run.rounds) {
    t.append(el('tr', {}, el('td', {}, r.round), el('td', {class: 'l'}, r.env),
      el('td', {}, r.levels.join(', ')), el('td', {}, r.episodes), el('td', {}, fmt(r.reward_mean)),
      el('td', {}, pct(r.success_rate))));
  }
  return el('div', {class: 'card'}, el('h3', {}, run.name + ': levels drawn by round'), t);
}

function curriculumCard(cur) {
  const card = el('div', {class: 'card curriculum', 'data-path': cur.path},
    el('h3', {}, 'curriculum ' + cur.path));
  if (cur.error) { card.append(el('div', {class: 'err'}, cur.error)); return card; }
  const t = el('table', {class: 'frontiers'}, el('tr', {},
    ['world', 'frontier', 'window', 'at frontier', 'accuracy', 'recent', 'weight', 'episodes']
      .map(h => el('th', {class: h === 'world' ? 'l' : ''}, h))));
  for (const s of cur.envs) {
    t.append(el('tr', {'data-env': s.env_id}, el('td', {class: 'l'}, s.env_id),
      el('td', {'data-key': 'frontier'}, `${s.frontier} of ${s.levels[s.levels.length - 1]}`),
      el('td', {}, s.window.join(',')), el('td', {}, s.frontier_samples),
      el('td', {}, pct(s.frontier_accuracy)), el('td', {}, pct(s.recent_success)),
      el('td', {}, fmt(s.weight, 2)), el('td', {}, s.episodes)));
  }
  card.append(t);
  const series = cur.envs.map((s, i) => {
    const moves = cur.history.filter(e => e.env_id === s.env_id);
    const pts = [];
    for (const e of moves) {
      if (pts.length) pts.push([e.episodes, pts[pts.length - 1][1]]);
      pts.push([e.episodes, e.level_to]);
    }
    if (pts.length) pts.push([Math.max(s.episodes, pts[pts.length - 1][0]), s.frontier]);
    return {name: s.env_id, color: COLORS[i % COLORS.length], points: pts};
  });
  const top = Math.max(1, ...cur.envs.map(s => s.levels[s.levels.length - 1]));
  card.append(lineChart('frontier level by episodes of the world', series,
    {ylo: 0, yhi: top, xlo: 0, xlabel: 'episodes', yticks: ticks(0, top, Math.min(top, 5))}));
  const h = el('table', {class: 'history'}, el('tr', {},
    ['when', 'world', 'event', 'from', 'to', 'samples', 'accuracy', 'episodes']
      .map(x => el('th', {}, x))));
  for (const e of cur.history) {
    h.append(el('tr', {}, el('td', {}, when(e.at)), el('td', {class: 'l'}, e.env_id),
      el('td', {class: 'l'}, e.event), el('td', {}, e.level_from ?? '–'), el('td', {}, e.level_to),
      el('td', {}, e.samples), el('td', {}, pct(e.accuracy)), el('td', {}, e.episodes)));
  }
  card.append(el('details', {open: ''}, el('summary', {}, 'frontier history'), h));
  return card;
}

function options(select, values, current, label) {
  select.replaceChildren(el('option', {value: ''}, label),
    ...values.map(v => el('option', {value: v}, v)));
  select.value = values.map(String).includes(String(current)) ? current : '';
}

function pick(rid, env, d) {
  Object.assign(state, {run: rid, env, difficulty: String(d), status: ''});
  filters();
  episodes().catch(failed);
  document.getElementById('episodes-section').scrollIntoView();
}

function filters() {
  const o = lastOverview;
  if (!o) return;
  const runSel = document.getElementById('f-run');
  runSel.replaceChildren(...o.runs.map(r => el('option', {value: r.id}, r.name)));
  runSel.value = state.run;
  const run = o.runs[state.run] || o.runs[0];
  if (!run) return;  // training runs only
  options(document.getElementById('f-env'), [...new Set(run.cells.map(c => c.env))].sort(),
    state.env, 'every world');
  options(document.getElementById('f-difficulty'),
    [...new Set(run.cells.map(c => c.difficulty))].sort((a, b) => a - b), state.difficulty,
    'every difficulty');
  options(document.getElementById('f-status'), STATUSES, state.status, 'every status');
}

async function episodes() {
  const q = new URLSearchParams({limit: 50});
  if (state.env) q.set('env', state.env);
  if (state.difficulty !== '') q.set('difficulty', state.difficulty);
  if (state.status) q.set('status', state.status);
  const data = await api(`/api/runs/${state.run}/episodes?` + q);
  const text = JSON.stringify([state.run, q.toString(), data]);
  if (text === lastEpisodes) return;
  lastEpisodes = text;
  const t = document.getElementById('episodes');
  t.replaceChildren(el('tr', {}, ['ended', 'episode', 'world', 'difficulty', 'status', 'reward',
    'steps', 'tool errors'].map(h => el('th', {class: h === 'episode' ? 'l' : ''}, h))));
  for (const e of data.episodes) {
    const href = `/episode?run=${state.run}&id=${encodeURIComponent(e.episode_id)}`;
    t.append(el('tr', {'data-episode': e.episode_id}, el('td', {}, when(e.ended)),
      el('td', {class: 'l'}, el('a', {href}, e.episode_id)), el('td', {class: 'l'}, e.env_id),
      el('td', {}, e.difficulty), el('td', {class: 'l'}, e.status), el('td', {}, fmt(e.reward)),
      el('td', {}, e.steps), el('td', {}, e.tool_errors)));
  }
  document.getElementById('episodes-total').textContent =
    `${data.total} episodes match; the newest ${data.episodes.length} shown`;
}

let lastText = '', lastEpisodes = '';

async function refresh() {
  const o = await api(`/api/overview?window=${state.window}`);
  const text = JSON.stringify([o, state.x]);
  if (text !== lastText) render(o);  // unchanged data: the page is left as it is
  lastText = text;
  if (o.runs.length) await episodes();
  const s = document.getElementById('status');
  s.classList.remove('err');
  s.textContent =
    `updated ${new Date().toLocaleTimeString()} · every ${CONFIG.refresh_ms / 1000} s`;
  document.body.dataset.refreshed = String(Date.now());
}

function render(o) {
  lastOverview = o;
  const colors = i => COLORS[i % COLORS.length];
  document.getElementById('runs').replaceChildren(...o.runs.map((r, i) => runCard(r, colors(i))));
  document.getElementById('charts').replaceChildren(charts(o.runs));
  document.getElementById('tables').replaceChildren(...o.runs.map(matrix));
  document.getElementById('training-section').hidden = !o.trainings.length;
  document.getElementById('trainings').replaceChildren(...(o.trainings.length ?
    [trainingChart(o.trainings), ...o.trainings.map((t, i) => trainingCard(t, colors(i)))] : []));
  const cur = [...o.curricula.map(curriculumCard),
    ...o.runs.filter(r => r.rounds.length).map(roundsTable)];
  document.getElementById('curricula').replaceChildren(...(cur.length ? cur :
    [el('div', {class: 'muted'}, 'no curriculum: these runs were not drawn from one ' +
      '(rollout --curriculum DB; name the file with --curriculum)')]));
  filters();
}

function bind() {
  const on = (id, key, after) => document.getElementById(id).addEventListener('change', ev => {
    state[key] = ev.target.value;
    if (after) after();
    refresh().catch(failed);
  });
  on('x-axis', 'x');
  on('window', 'window');
  on('f-run', 'run', () => {
    state.run = Number(state.run); state.env = ''; state.difficulty = '';
  });
  on('f-env', 'env');
  on('f-difficulty', 'difficulty');
  on('f-status', 'status');
}

bind();
refresh().catch(failed);
setInterval(() => refresh().catch(failed), CONFIG.refresh_ms);
"""

EPISODE_SCRIPT = r"""
function rubric(items) {
  const t = el('table', {id: 'rubric'}, el('tr', {},
    ['item', 'kind', 'weight', 'score', 'reason']
      .map(h => el('th', {class: h === 'reason' || h === 'item' ? 'l' : ''}, h))));
  for (const i of items) {
    t.append(el('tr', {class: i.score >= 1 ? 'pass' : 'fail', 'data-item': i.name},
      el('td', {class: 'l'}, i.name), el('td', {}, i.kind), el('td', {}, fmt(i.weight, 2)),
      el('td', {}, fmt(i.score, 2)), el('td', {class: 'l'}, i.reason)));
  }
  return t;
}

function message(m) {
  const box = el('div', {class: 'msg role-' + m.role, 'data-role': m.role});
  const who = m.role === 'tool' ? ['tool result', `${m.tool || '?'} (${m.tool_call_id})`] :
    [m.role, m.name];
  box.append(el('div', {class: 'who'}, el('span', {class: 'role'}, who[0]),
    who[1] ? el('span', {class: 'what'}, ' · ' + who[1]) : null));
  if (m.content) box.append(el('pre', {class: 'content'}, m.content));
  for (const c of m.tool_calls || []) {
    box.append(el('div', {class: 'toolcall', 'data-tool': c.name},
      el('span', {class: 'name'}, c.name), el('span', {class: 'muted'}, '  call ' + c.id),
      el('pre', {}, c.arguments)));
  }
  return box;
}

function stepsTable(steps) {
  const t = el('table', {id: 'steps'}, el('tr', {},
    ['#', 'actor', 'action', 'came back', 'state after', 'changed']
      .map(h => el('th', {class: 'l'}, h))));
  for (const s of steps) {
    t.append(el('tr', {class: s.changed ? 'changed' : ''}, el('td', {}, s.index),
      el('td', {class: 'l'}, s.actor), el('td', {class: 'l action'}, el('pre', {}, s.action)),
      el('td', {class: 'l' + (s.error ? ' err' : '')}, s.kind + (s.error ? ': ' + s.error : '')),
      el('td', {class: 'l'}, el('code', {}, s.state_hash.slice(0, 12))),
      el('td', {class: 'l'}, s.changed ? 'changed' : '')));
  }
  return t;
}

function val(v) { return v === null || v === undefined ? '–' : JSON.stringify(v); }

const DIFF_NOTE = {
  not_replayable: 'the replay of this record does not reach the state it records, so no ' +
    'diff is shown',
  not_applicable: 'no diff of database rows for this world',
  unavailable: 'the diff cannot be recomputed here',
};

function diffView(d) {
  const box = el('div', {id: 'diff', 'data-status': d.status});
  if (d.status !== 'ok') {
    box.append(el('div', {class: d.status === 'not_replayable' ? 'err' : 'muted'},
      DIFF_NOTE[d.status] || d.status), el('div', {class: 'muted reason'}, d.reason || ''));
    return box;
  }
  const n = d.summary;
  box.append(el('div', {class: 'summary'}, ['made', 'missing', 'wrong', 'collateral'].map(k =>
    el('span', {class: 'status', 'data-count': k}, k + ' ', el('b', {}, n[k])))),
    el('div', {class: 'muted'}, `${n.required} required change(s); recomputed by replaying ` +
      `${d.replayed} tool call(s) (state ${d.state_hash.slice(0, 12)}, as recorded)`));
  const t = el('table', {id: 'diff-rows'}, el('tr', {},
    ['row', 'change', 'as required?', 'field', 'before', 'target', 'actual']
      .map(h => el('th', {class: 'l'}, h))));
  for (const r of d.rows) {
    const fields = r.fields.length ? r.fields : [null];
    fields.forEach((f, i) => {
      const cls = r.status === 'made' ? 'pass' : 'fail';
      const okCls = !f || f.ok === true ? '' : (f.ok === null ? 'muted' : 'err');
      t.append(el('tr', {class: cls, 'data-row': `${r.table}/${r.id}`, 'data-status': r.status},
        el('td', {class: 'l'}, i ? '' : `${r.table} ${r.id}` +
          (r.row && r.row !== r.id ? ` (as ${r.row})` : '')),
        el('td', {class: 'l'}, i ? '' : r.op), el('td', {class: 'l'}, i ? '' : r.status),
        el('td', {class: 'l ' + okCls}, f ? f.field : ''),
        el('td', {class: 'l'}, f ? val(f.before) : ''),
        el('td', {class: 'l'}, f ? val(f.target) : ''),
        el('td', {class: 'l ' + okCls}, f ? val(f.actual) : '')));
    });
  }
  if (!d.rows.length) t.append(el('tr', {}, el('td', {class: 'l muted', colspan: 7},
    'the task requires no change of state')));
  box.append(t, el('h3', {style: 'margin-top:10px'}, 'collateral changes'));
  if (!d.collateral.length) {
    box.append(el('div', {class: 'muted', id: 'no-collateral'}, 'none: every row changed is one ' +
      'the target names'));
    return box;
  }
  const c = el('table', {id: 'diff-collateral'}, el('tr', {},
    ['row', 'change', 'field', 'before', 'after'].map(h => el('th', {class: 'l'}, h))));
  for (const r of d.collateral) {
    const fields = r.fields.length ? r.fields : [null];
    fields.forEach((f, i) => c.append(el('tr', {class: 'fail', 'data-row': `${r.table}/${r.id}`},
      el('td', {class: 'l'}, i ? '' : `${r.table} ${r.id}`), el('td', {class: 'l'}, i ? '' : r.op),
      el('td', {class: 'l'}, f ? f.field : ''), el('td', {class: 'l'}, f ? val(f.before) : ''),
      el('td', {class: 'l'}, f ? val(f.after) : ''))));
  }
  box.append(c);
  return box;
}

async function loadDiff(run, id) {
  const card = document.getElementById('diff-card');
  try {
    const d = await api(`/api/runs/${encodeURIComponent(run)}/episode/diff?id=` +
      encodeURIComponent(id));
    card.replaceChildren(el('h3', {}, 'state diff against the target'), diffView(d));
    document.body.dataset.diff = d.status;
  } catch (err) {
    card.replaceChildren(el('h3', {}, 'state diff against the target'),
      el('div', {class: 'err'}, err.message));
    document.body.dataset.diff = 'error';
  }
}

function campaignView(c) {
  const box = el('div', {id: 'campaign', 'data-status': c.status});
  if (c.status !== 'ok') {
    box.append(el('div', {class: 'muted'}, c.reason || c.status));
    return box;
  }
  box.append(el('div', {class: 'muted'}, `${c.requests.length} of ${c.tasks} request(s) ` +
    `opened; clock at ${c.clock}; ${c.events.length} event(s) fired`));
  const t = el('table', {id: 'campaign-requests'}, el('tr', {},
    ['#', 'task', 'opened', 'due', 'closed', 'steps', 'reward', 'events before it', 'request']
      .map(h => el('th', {class: 'l'}, h))));
  for (const r of c.requests) {
    t.append(el('tr', {class: r.reward === 1 ? 'pass' : 'fail', 'data-request': r.number},
      el('td', {}, r.number), el('td', {class: 'l'}, r.task_id),
      el('td', {class: 'l'}, r.opened), el('td', {class: 'l'}, r.due || '–'),
      el('td', {class: 'l' + (r.late ? ' err' : '')}, (r.closed || 'open') +
        (r.late ? ' (late)' : '')),
      el('td', {class: 'l'}, `${r.steps[0] + 1}–${r.steps[1] ?? ''}`),
      el('td', {}, fmt(r.reward)),
      el('td', {class: 'l'}, r.events.join('; ') || '–'),
      el('td', {class: 'l'}, r.instruction)));
  }
  box.append(t);
  return box;
}

async function loadCampaign(run, id) {
  const c = await api(`/api/runs/${encodeURIComponent(run)}/episode/campaign?id=` +
    encodeURIComponent(id));
  if (c.status === 'not_applicable') return;
  const card = el('div', {class: 'card', id: 'campaign-card'},
    el('h3', {}, 'campaign: requests in order'), campaignView(c));
  document.getElementById('diff-card').before(card);
  document.body.dataset.campaign = c.status;
}

async function load() {
  const q = new URLSearchParams(location.search);
  const run = q.get('run') || '0', id = q.get('id') || '';
  document.title = id + ' · envfactory dashboard';
  const e = await api(`/api/runs/${encodeURIComponent(run)}/episode?id=${encodeURIComponent(id)}`);
  const m = e.meta;
  const main = document.getElementById('episode');
  main.replaceChildren(
    el('h2', {id: 'episode-id'}, e.episode_id),
    el('div', {class: 'muted'}, 'run ' + e.run),
    el('div', {class: 'side'},
      el('div', {class: 'card'}, el('h3', {}, 'outcome'),
        el('div', {class: 'big', 'data-key': 'reward'}, fmt(m.reward)),
        kv([['status', m.status], ['world', m.env_id], ['split', m.split],
            ['difficulty', m.difficulty], ['task', m.task_id], ['sample', m.sample_index],
            ['model', `${m.model} (${m.provider})`], ['advantage', fmt(m.advantage)],
            ['time', secs(m.wall_s)], ['model calls', m.calls]]),
        m.error ? el('div', {class: 'err'}, m.error) : null),
      el('div', {class: 'card'}, el('h3', {}, 'rubric'), rubric(e.rubric)),
      el('div', {class: 'card', id: 'state'}, el('h3', {}, 'state against the target'),
        el('ul', {}, e.against_target.map(i => el('li', {'data-item': i.name},
          `${i.name}: ${i.reason}`))),
        el('div', {class: 'muted'}, 'final state hash ', el('code', {}, e.state_hash || '–')),
        el('div', {class: 'muted'}, 'the rubric\'s verdict on the target; the rows are ' +
          'in the state diff below, recomputed by replaying the episode'),
        el('h3', {style: 'margin-top:10px'}, 'steps and state changes'), stepsTable(e.steps))),
    el('section', {}, el('div', {class: 'card', id: 'diff-card'},
      el('h3', {}, 'state diff against the target'),
      el('div', {class: 'muted'}, 'replaying the episode…'))),
    el('section', {}, el('h2', {}, 'conversation'),
      el('div', {id: 'conversation'}, e.conversation.map(message))),
    el('section', {}, el('h2', {}, 'metrics'),
      kv(Object.entries(e.metrics).map(([k, v]) => [k, v]))));
  document.body.dataset.loaded = '1';
  if (m.env_id.startsWith('campaign-')) await loadCampaign(run, id);
  await loadDiff(run, id);
}

load().catch(err => {
  document.getElementById('episode').replaceChildren(el('div', {class: 'err'}, err.message));
  document.body.dataset.loaded = 'error';
});
"""


def _page(title: str, body: str, script: str) -> str:
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{STYLE}</style></head>
<body>
<header><h1>envfactory dashboard</h1><a href="/">runs</a><span id="status"></span></header>
<main>{body}</main>
<script type="application/json" id="config">__CONFIG__</script>
<script>{SCRIPT}{script}</script>
</body></html>"""


OVERVIEW_PAGE = _page(
    "envfactory dashboard",
    """
<section><h2>Runs</h2><div id="runs" class="side"></div></section>
<section id="training-section" hidden><h2>Training</h2>
 <div id="trainings" class="side"></div></section>
<section><h2>Reward and success over time</h2>
 <div class="controls">
  <label>x axis <select id="x-axis"><option value="time">time</option>
   <option value="episodes">episodes</option></select></label>
  <label>mean of the latest <select id="window"><option>5</option><option>10</option>
   <option selected>20</option><option>50</option><option>200</option></select> episodes</label>
 </div>
 <div id="charts"></div></section>
<section><h2>By world × difficulty</h2><div id="tables" class="side"></div></section>
<section><h2>Curriculum frontiers</h2><div id="curricula" class="side"></div></section>
<section id="episodes-section"><h2>Episodes</h2>
 <div class="controls"><select id="f-run"></select><select id="f-env"></select>
  <select id="f-difficulty"></select><select id="f-status"></select>
  <span id="episodes-total" class="muted"></span></div>
 <table id="episodes"></table></section>
""",
    OVERVIEW_SCRIPT,
)

EPISODE_PAGE = _page(
    "episode · envfactory dashboard", '<div id="episode">loading…</div>', EPISODE_SCRIPT
)
