// app.js - the built-in page: reads the agent's JSON (/ui/api/..., /probes, /<probe>, /flamegraph/query)
// and changes probes only through the REST API's PUT /<probe>. Every value reaches the DOM as text
// (textContent, text nodes, canvas fillText): nothing a probe or a process name carries is parsed as HTML.
'use strict';

(function () {
  const REFRESH_MS = 2000;
  const EVENTS_KEEP = 500;
  const ACTIVE = new Set(['running', 'hung', 'checking', 'check_wait', 'backoff']);

  const S = {
    contracts: new Map(), status: null, prev: null, rest: null, tab: 'probes',
    open: new Set(), details: new Map(), imdbTable: null, eventsNext: 0, events: [],
    flame: null, busy: false, timer: 0,
  };

  const $ = (id) => document.getElementById(id);

  // el('td', {class: 'num', title: x}, child, 'text', ...): children that are not nodes become text nodes.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k.startsWith('data-') || k === 'type' || k === 'for') e.setAttribute(k, String(v));
      else e[k] = v;
    }
    for (const c of kids) {
      if (c === undefined || c === null) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

  function notice(msg, ok) {
    const n = $('notice');
    n.textContent = msg;
    n.className = ok ? 'notice ok' : 'notice';
    n.hidden = !msg;
  }

  async function getJSON(url) {
    const r = await fetch(url, { cache: 'no-store', credentials: 'same-origin' });
    const text = await r.text();
    let j;
    try { j = JSON.parse(text); } catch (e) { throw new Error(url + ': HTTP ' + r.status + ', not JSON'); }
    if (!r.ok) throw new Error(url + ': ' + (j.message || j.DESCRIPTION || 'HTTP ' + r.status));
    return j;
  }

  async function put(name, body) {
    const r = await fetch('/' + encodeURIComponent(name), {
      method: 'PUT', credentials: 'same-origin', cache: 'no-store',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    });
    let j = {};
    try { j = await r.json(); } catch (e) { /* a reply without a body */ }
    if (!r.ok) throw new Error('PUT /' + name + ': ' + (j.message || 'HTTP ' + r.status));
    return j;
  }

  // ---- formatting ---------------------------------------------------------------------------------

  function num(v) {
    if (v === undefined || v === null || v === '') return '';
    const n = Number(v);
    if (!Number.isFinite(n)) return String(v);
    return Number.isInteger(n) ? n.toLocaleString('en-US') : n.toLocaleString('en-US', { maximumFractionDigits: 2 });
  }

  function dur(ms) {
    if (!ms) return '';
    let s = Math.floor(ms / 1000);
    const d = Math.floor(s / 86400); s -= d * 86400;
    const h = Math.floor(s / 3600); s -= h * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    if (d) return d + 'd ' + h + 'h';
    if (h) return h + 'h ' + m + 'm';
    if (m) return m + 'm ' + s + 's';
    return s + 's';
  }

  function bytes(n) {
    n = Number(n) || 0;
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : n) + ' ' + u[i];
  }

  function clock(ms) {
    const d = new Date(Number(ms));
    return Number.isFinite(d.getTime()) ? d.toLocaleString('en-GB', { hour12: false }) : '';
  }

  // ---- header -------------------------------------------------------------------------------------

  function renderHeader() {
    const st = S.status, sup = st.supervisor || {}, f = clear($('facts'));
    const fact = (k, v) => f.append(el('div', {}, el('dt', {}, k), el('dd', {}, v)));
    let cpu = '';
    if (S.prev && S.prev.supervisor) {
      const dt = (sup.uptime_ms - S.prev.supervisor.uptime_ms) * 1000;
      const used = (sup.cpu_user_us + sup.cpu_sys_us) - (S.prev.supervisor.cpu_user_us + S.prev.supervisor.cpu_sys_us);
      if (dt > 0) cpu = (100 * used / dt).toFixed(1) + ' %';
    }
    fact('host', sup.hostname);
    fact('version', sup.version);
    fact('uptime', dur(sup.uptime_ms));
    fact('records', num(sup.records));
    fact('cpu', cpu);
    fact('max rss', bytes((sup.max_rss_kb || 0) * 1024));
    $('footer').textContent = 'machine ' + (sup.machine_id || '') + ' · supervisor pid ' + sup.pid +
      ' · updated ' + new Date().toLocaleTimeString('en-GB', { hour12: false });
  }

  // ---- probes -------------------------------------------------------------------------------------

  function probeList() {
    const byName = new Map((S.status.probes || []).map((p) => [p.name, p]));
    const used = new Set(), rows = [], missing = [];
    for (const r of (S.rest && S.rest.probes) || []) {
      const st = r.name ? byName.get(r.name) : undefined;
      if (st) used.add(st.name);
      if (!r.available && !st) { missing.push(r.rest_name); continue; }
      rows.push({ key: r.rest_name, rest: r, st });
    }
    for (const p of S.status.probes || []) {
      if (!used.has(p.name)) rows.push({ key: p.name, rest: null, st: p });
    }
    return { rows, missing };
  }

  function rate(st) {
    if (!st || !S.prev) return '';
    const old = (S.prev.probes || []).find((p) => p.name === st.name);
    const dt = (S.status.supervisor.uptime_ms - S.prev.supervisor.uptime_ms) / 1000;
    if (!old || dt <= 0) return '';
    return num(Math.max(0, st.records - old.records) / dt);
  }

  function stateBadge(state, st) {
    let cls = 'badge ' + state;
    if (st && state !== 'running' && st.restarts > 0 && st.last_exit_status) cls += ' bad';
    return el('span', { class: cls, 'data-state': state }, state);
  }

  function renderProbes() {
    const tb = clear($('probe-rows'));
    const { rows, missing } = probeList();
    for (const r of rows) {
      const st = r.st || {}, rest = r.rest, state = st.state || (rest && rest.state) || 'stopped';
      const active = rest ? rest.rest_state === 'running' : ACTIVE.has(state);
      const lost = (st.ipc_lost_records || 0), rej = (st.rejected_total || 0);
      const actions = el('td', {});
      if (rest) {
        actions.append(active
          ? el('button', { type: 'button', class: 'act stop', 'data-action': 'stop', 'data-probe': r.key }, 'Stop')
          : el('button', { type: 'button', class: 'act', 'data-action': 'start', 'data-probe': r.key }, 'Start'));
      }
      actions.append(el('button', { type: 'button', class: 'act', 'data-action': 'details', 'data-probe': r.key },
        S.open.has(r.key) ? 'Hide' : 'Details'));
      const tr = el('tr', { 'data-probe': r.key },
        el('td', {}, el('span', { class: 'name' }, r.key),
          el('span', { class: 'bin' }, rest ? rest.bin + (rest.kind === 'extend' ? ' (extend)' : '') : (st.kind || '') + ' ' + (st.command || ''))),
        el('td', { class: 'state' }, stateBadge(state, st)),
        el('td', { class: 'num' }, st.pid || ''),
        el('td', { class: 'num' }, dur(st.uptime_ms)),
        el('td', { class: 'num' }, num(st.starts)),
        el('td', { class: 'num' + (st.restarts ? ' warn' : '') }, num(st.restarts)),
        el('td', { class: 'num' }, num(st.records)),
        el('td', { class: 'num' }, rate(r.st)),
        el('td', { class: 'num' + (rej ? ' warn' : '') }, num(rej)),
        el('td', { class: 'num' + (lost ? ' warn' : ''), title: num(st.ipc_lost_batches) + ' batches' }, num(lost)),
        el('td', { class: 'num', title: 'configuration version applied by the probe / sent' },
          st.config_version ? num(st.config_version_applied) + '/' + num(st.config_version) : ''),
        actions);
      tb.append(tr);
      if (S.open.has(r.key)) {
        let d = S.details.get(r.key);
        if (!d) { d = el('td', { colSpan: 12 }, 'loading…'); S.details.set(r.key, d); loadDetail(r.key, r); }
        tb.append(el('tr', { class: 'detail', 'data-detail': r.key }, d));
      }
    }
    $('not-installed').textContent = missing.length ? 'Not installed here: ' + missing.join(', ') : '';
  }

  async function loadDetail(key, row) {
    const td = S.details.get(key);
    try {
      const conf = row.rest ? await getJSON('/' + encodeURIComponent(key)) : null;
      renderDetail(td, key, row, conf);
    } catch (e) {
      clear(td).append(String(e.message));
    }
  }

  function renderDetail(td, key, row, conf) {
    const st = row.st || {}, rt = (conf && conf.runtime) || {};
    const c = S.contracts.get(key);
    const left = el('div', {}), right = el('div', {});
    if (c && c.summary) left.append(el('p', {}, c.summary));
    const kv = el('dl', { class: 'kv' });
    const add = (k, v) => { if (v !== undefined && v !== '') kv.append(el('dt', {}, k), el('dd', {}, v)); };
    add('command line', el('code', {}, rt.command_line || ((st.command || '') + ' ' + (st.param || ''))));
    add('kind', rt.kind || st.kind);
    add('desired', st.desired);
    add('last exit', st.last_exit_signal ? 'signal ' + st.last_exit_signal : (st.starts ? 'status ' + st.last_exit_status : ''));
    add('next restart in', st.state === 'backoff' ? dur(st.backoff_ms) : '');
    add('batches', num(st.batches));
    add('accepted', num(st.accepted));
    add('lost', num(st.ipc_lost_batches) + ' batches, ' + num(st.ipc_lost_records) + ' records');
    if (rt.scope) add('scope', rt.scope.all ? 'all processes' : JSON.stringify(rt.scope));
    if (c && c.snoopers.length) add('snoopers', c.snoopers.join(', '));
    left.append(el('h3', {}, 'process'), kv);
    if (st.rejected_by_table && st.rejected_by_table.length) {
      const t = el('table', { class: 'grid small' }, el('tr', {}, el('th', {}, 'table'), el('th', {}, 'reason'), el('th', {}, 'count')));
      for (const x of st.rejected_by_table) t.append(el('tr', {}, el('td', {}, x.table), el('td', {}, x.reason), el('td', { class: 'num' }, num(x.count))));
      left.append(el('h3', {}, 'rejected records'), t);
    }
    if (c && conf && c.subprobes.length) {
      const on = new Set((conf.cmd && conf.cmd.probe) || []);
      const useDefault = on.size === 0;
      const box = el('div', { class: 'subprobes' });
      for (const sp of c.subprobes) {
        const id = 'sp-' + key + '-' + sp.name;
        box.append(el('label', {}, el('input', { type: 'checkbox', id, 'data-subprobe': sp.name, checked: useDefault ? sp.default : on.has(sp.name) }), ' ' + sp.name));
      }
      right.append(el('h3', {}, 'sub-probes' + (useDefault ? ' (defaults in force)' : '')), box,
        el('button', { type: 'button', class: 'act', 'data-action': 'subprobes', 'data-probe': key }, 'Apply sub-probes'));
    }
    if (c && c.params.length) {
      const params = (conf && conf.params) || {};
      const t = el('table', { class: 'grid small' }, el('tr', {}, el('th', {}, 'parameter'), el('th', {}, 'value'), el('th', {}, 'accepts')));
      for (const p of c.params) {
        const v = params[p.name];
        t.append(el('tr', {}, el('td', { title: p.help }, p.name + (p.restart ? ' ↻' : '')),
          el('td', { class: 'mono' }, v === undefined ? '(default)' : (typeof v === 'string' ? v : JSON.stringify(v))),
          el('td', {}, p.accepts)));
      }
      right.append(el('h3', {}, 'parameters (PUT /' + key + ' {"params": …} to change)'), t);
    }
    clear(td).append(el('div', { class: 'detail-box' }, left, right));
  }

  async function onProbeClick(ev) {
    const b = ev.target.closest('button[data-action]');
    if (!b) return;
    const key = b.getAttribute('data-probe'), action = b.getAttribute('data-action');
    if (action === 'details') {
      if (S.open.has(key)) { S.open.delete(key); S.details.delete(key); } else S.open.add(key);
      renderProbes();
      return;
    }
    b.disabled = true;
    try {
      let body;
      if (action === 'start') body = { state: 'running' };
      else if (action === 'stop') body = { state: 'stopped' };
      else {
        const boxes = document.querySelectorAll('tr[data-detail="' + CSS.escape(key) + '"] input[data-subprobe]');
        body = { cmd: { probe: Array.from(boxes).filter((x) => x.checked).map((x) => x.getAttribute('data-subprobe')) } };
      }
      const r = await put(key, body);
      notice(key + ': ' + (r.message || 'done'), true);
      S.details.delete(key);
      await refresh(true);
    } catch (e) {
      notice(String(e.message));
      b.disabled = false;
    }
  }

  // ---- imdb tables ---------------------------------------------------------------------------------

  async function refreshTables() {
    const j = await getJSON('/ui/api/imdb');
    const ul = clear($('imdb-tables'));
    if (!j.enabled) {
      $('imdb-summary').textContent = 'The imdb is off: metric.out_channel is not "web_server".';
      return;
    }
    $('imdb-summary').textContent = j.tables.length + ' tables, ' + num(j.rows) + ' rows, ' + bytes(j.bytes);
    for (const t of j.tables) {
      ul.append(el('li', { class: t.table === S.imdbTable ? 'active' : '', 'data-table': t.table, title: t.entity },
        el('span', {}, t.table), el('span', { class: 'count' }, num(t.rows))));
    }
    if (S.imdbTable && j.tables.some((t) => t.table === S.imdbTable)) await refreshRows();
  }

  async function refreshRows() {
    const j = await getJSON('/ui/api/imdb/rows?table=' + encodeURIComponent(S.imdbTable) + '&limit=100');
    $('imdb-title').textContent = j.table;
    $('imdb-sub').textContent = 'entity ' + j.entity + ' · ' + num(j.rows_total) + ' rows, the ' +
      j.rows.length + ' most recently updated shown';
    const cols = [];
    for (const r of j.rows) for (const k of Object.keys(r.labels)) if (!cols.includes(k)) cols.push(k);
    const t = clear($('imdb-rows'));
    const head = el('tr', {});
    for (const c of cols) head.append(el('th', {}, c));
    for (const m of j.metrics) {
      const scalar = m.type === 'gauge' || m.type === 'counter';
      head.append(el('th', { title: m.type + ': ' + m.description, class: scalar ? 'num' : '' }, m.name));
    }
    head.append(el('th', { class: 'num' }, 'age'));
    t.append(el('thead', {}, head));
    const tb = el('tbody', {});
    for (const r of j.rows) {
      const tr = el('tr', {});
      for (const c of cols) tr.append(el('td', {}, r.labels[c] === undefined ? '' : r.labels[c]));
      j.metrics.forEach((m, i) => {
        const v = r.values[i];
        const scalar = m.type === 'gauge' || m.type === 'counter';
        tr.append(el('td', { class: scalar ? 'num' : 'mono', title: scalar ? undefined : v }, scalar ? num(v) : (v.length > 40 ? v.slice(0, 40) + '…' : v)));
      });
      tr.append(el('td', { class: 'num' }, dur(r.age_ms) || '0s'));
      tb.append(tr);
    }
    t.append(tb);
  }

  // ---- events --------------------------------------------------------------------------------------

  async function refreshEvents() {
    const j = await getJSON('/ui/api/events' + (S.eventsNext ? '?after=' + (S.eventsNext - 1) : ''));
    if (!j.enabled) {
      $('events-info').textContent = 'Events are off (event.out_channel is "").';
      return;
    }
    S.events.push(...j.events);
    if (S.events.length > EVENTS_KEEP) S.events.splice(0, S.events.length - EVENTS_KEEP);
    S.eventsNext = j.next;
    $('events-info').textContent = S.events.length + ' most recent events (the last 256 are kept by the agent); newest first.';
    const tb = clear($('event-rows'));
    for (let i = S.events.length - 1; i >= 0; i--) {
      const e = S.events[i].event || {}, res = e.Resource || {}, attr = e.Attributes || {};
      tb.append(el('tr', {},
        el('td', { class: 'mono' }, clock(e.Timestamp)),
        el('td', { class: 'sev-' + (e.SeverityText || '') }, e.SeverityText || ''),
        el('td', {}, res.metric || ''),
        el('td', { class: 'mono' }, attr.entity_id || ''),
        el('td', {}, e.Body || S.events[i].text || '')));
    }
  }

  // ---- agent (self-metrics) --------------------------------------------------------------------------

  function card(title, obj) {
    const kv = el('dl', { class: 'kv' });
    const walk = (o, prefix) => {
      for (const [k, v] of Object.entries(o || {})) {
        if (v && typeof v === 'object' && !Array.isArray(v)) walk(v, prefix + k + '.');
        else if (Array.isArray(v)) kv.append(el('dt', {}, prefix + k), el('dd', {}, v.length + ' entries'));
        else kv.append(el('dt', {}, prefix + k), el('dd', { class: 'mono' }, typeof v === 'number' ? num(v) : String(v)));
      }
    };
    walk(obj, '');
    return el('div', { class: 'card' }, el('h3', {}, title), kv);
  }

  function renderAgent() {
    const st = S.status, box = clear($('agent-cards'));
    box.append(card('supervisor', st.supervisor), card('REST API server', st.rest_api_server));
    for (const [k, v] of Object.entries(st.export || {})) {
      if (v && typeof v === 'object' && !Array.isArray(v)) box.append(card('export: ' + k, v));
    }
  }

  // ---- flame graph (canvas view of the query API's tree) ---------------------------------------------

  const ROW = 17;

  function flameColor(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    if (name.startsWith('[k]') || name.endsWith('_[k]')) return 'hsl(' + (20 + h % 20) + ',75%,62%)';
    if (name.startsWith('[t]') || name.startsWith('[p]') || name.startsWith('[Pod]') || name.startsWith('[Con]')) return 'hsl(210,35%,78%)';
    if (name.startsWith('[l]')) return 'hsl(' + (45 + h % 15) + ',80%,60%)';
    return 'hsl(' + (h % 40) + ',' + (60 + h % 25) + '%,' + (55 + h % 10) + '%)';
  }

  async function loadFlame() {
    const ev = $('flame-event').value, app = $('flame-app').value.trim() || 'Total';
    const win = Number($('flame-window').value), now = Math.floor(Date.now() / 1000);
    const url = '/flamegraph/query?app=' + encodeURIComponent(app) + '&event=' + encodeURIComponent(ev) +
      '&time_start=' + (now - win) + '&time_end=' + now;
    const j = await getJSON(url);
    const nodes = new Map(), roots = [];
    for (const n of j.result || []) nodes.set(n.node_id, { name: n.profile_location_str, self: n.self_value, total: n.total_value, kids: [] });
    for (const n of j.result || []) {
      const me = nodes.get(n.node_id), p = nodes.get(n.parent_node_id);
      if (p && p !== me) p.kids.push(me); else roots.push(me);
    }
    for (const n of nodes.values()) n.kids.sort((a, b) => b.total - a.total || (a.name < b.name ? -1 : 1));
    const root = roots[0] || { name: app, total: 0, self: 0, kids: [] };
    S.flame = { root, zoom: root, unit: ev === 'mem' ? 'faults' : ev === 'mem-alloc' ? 'bytes' : 'µs', rects: [] };
    $('flame-info').textContent = nodes.size > 1
      ? ev + ' of ' + app + ', last ' + $('flame-window').selectedOptions[0].textContent + ': ' + num(root.total) + ' ' + S.flame.unit + ', ' + nodes.size + ' frames' + (j.DESCRIPTION ? ' (' + j.DESCRIPTION + ')' : '') +
        (app === 'Total' ? '. Click a process ([p]) for its stacks.' : '. Click a frame to zoom.')
      : 'No ' + ev + ' samples of ' + app + ' in that window (is the flamegraph probe running?).';
    drawFlame();
  }

  function depthOf(n) { let d = 0; for (const k of n.kids) d = Math.max(d, depthOf(k)); return d + 1; }

  function drawFlame() {
    const f = S.flame, cv = $('flame');
    if (!f) return;
    const w = cv.parentElement.clientWidth || 800, dpr = window.devicePixelRatio || 1;
    const rows = Math.min(depthOf(f.zoom), 200);
    const h = Math.max(1, rows) * ROW + 2;
    cv.width = Math.floor(w * dpr); cv.height = Math.floor(h * dpr);
    cv.style.height = h + 'px';
    const g = cv.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    g.font = '11px ui-monospace, "DejaVu Sans Mono", monospace';
    g.textBaseline = 'middle';
    f.rects = [];
    const total = f.zoom.total || 1;
    const draw = (n, x, depth) => {
      const width = (n.total / total) * w;
      if (width < 0.5 || depth >= rows) return;
      const y = depth * ROW;
      g.fillStyle = flameColor(n.name);
      g.fillRect(x, y, Math.max(width - 0.5, 0.5), ROW - 1);
      f.rects.push({ x, y, w: width, n });
      if (width > 24) {
        g.save();
        g.beginPath(); g.rect(x, y, width - 2, ROW); g.clip();
        g.fillStyle = '#111';
        g.fillText(n.name, x + 3, y + ROW / 2);
        g.restore();
      }
      let cx = x;
      for (const k of n.kids) { draw(k, cx, depth + 1); cx += (k.total / total) * w; }
    };
    draw(f.zoom, 0, 0);
  }

  function flameHit(ev) {
    const f = S.flame;
    if (!f) return null;
    const r = $('flame').getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    return f.rects.find((q) => x >= q.x && x < q.x + q.w && y >= q.y && y < q.y + ROW) || null;
  }

  // ---- refresh and wiring ---------------------------------------------------------------------------

  async function refresh(force) {
    if (S.busy && !force) return;
    S.busy = true;
    try {
      const [status, rest] = await Promise.all([getJSON('/ui/api/status'), getJSON('/probes')]);
      S.prev = S.status; S.status = status; S.rest = rest;
      renderHeader();
      if (S.tab === 'probes') renderProbes();
      else if (S.tab === 'tables') await refreshTables();
      else if (S.tab === 'events') await refreshEvents();
      else if (S.tab === 'agent') renderAgent();
      document.body.setAttribute('data-loaded', '1');
    } catch (e) {
      notice(String(e.message));
    } finally {
      S.busy = false;
    }
  }

  function schedule() {
    clearInterval(S.timer);
    if ($('autorefresh').checked) S.timer = setInterval(refresh, REFRESH_MS);
  }

  function showTab(name) {
    S.tab = name;
    for (const b of document.querySelectorAll('#tabs button')) b.classList.toggle('active', b.getAttribute('data-tab') === name);
    for (const s of document.querySelectorAll('section.tab')) s.hidden = s.id !== 'tab-' + name;
    if (name === 'flame' && !S.flame) loadFlame().catch((e) => notice(String(e.message)));
    refresh(true);
  }

  async function init() {
    $('tabs').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-tab]');
      if (b) showTab(b.getAttribute('data-tab'));
    });
    $('probe-rows').addEventListener('click', onProbeClick);
    $('imdb-tables').addEventListener('click', (ev) => {
      const li = ev.target.closest('li[data-table]');
      if (!li) return;
      S.imdbTable = li.getAttribute('data-table');
      refreshTables().catch((e) => notice(String(e.message)));
    });
    $('flame-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      loadFlame().catch((e) => notice(String(e.message)));
    });
    $('flame-reset').addEventListener('click', () => { if (S.flame) { S.flame.zoom = S.flame.root; drawFlame(); } });
    $('flame').addEventListener('click', (ev) => {
      const hit = flameHit(ev);
      if (!hit) return;
      // Total stops at processes and threads: a process opens its own view with whole stacks
      if (S.flame.root.name === 'Total' && hit.n.name.startsWith('[p] ')) {
        $('flame-app').value = hit.n.name.slice(4);
        loadFlame().catch((e) => notice(String(e.message)));
        return;
      }
      S.flame.zoom = hit.n === S.flame.zoom ? S.flame.root : hit.n;
      drawFlame();
    });
    $('flame').addEventListener('mousemove', (ev) => {
      const hit = flameHit(ev), f = S.flame;
      $('flame-hover').textContent = hit
        ? hit.n.name + ' — ' + num(hit.n.total) + ' ' + f.unit + ' (' + (100 * hit.n.total / (f.root.total || 1)).toFixed(2) + ' %), self ' + num(hit.n.self)
        : '';
    });
    window.addEventListener('resize', drawFlame);
    $('autorefresh').addEventListener('change', schedule);
    try {
      for (const c of await getJSON('/ui/api/contracts')) S.contracts.set(c.rest_name, c);
    } catch (e) {
      notice(String(e.message));
    }
    await refresh(true);
    schedule();
  }

  document.addEventListener('DOMContentLoaded', init);
})();
