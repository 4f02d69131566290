// The operator console's script: reads the console's JSON (authorised by the session
// cookie, which this script never sees) and draws it. Every value is written as text
// (never as markup), and charts are SVG elements made here: no library, no other host.
'use strict';

(() => {
  const OVERVIEW_EVERY_MS = 1000;
  const DETAIL_EVERY_MS = 5000;
  const TRAFFIC_EVERY_MS = 5000;
  const SEARCH_DELAY_MS = 250;
  // The traffic charts' widest window: what the server keeps (15 minutes); narrower
  // while less is kept, down to a minute.
  const WINDOW_MS = 15 * 60 * 1000;
  const NARROWEST_MS = 60 * 1000;
  const ROUTES_SHOWN = 12;
  const SVG = 'http://www.w3.org/2000/svg';

  let query = '';
  let selected = null;
  let searchTimer = null;
  // The selected workspace's last description, and its row of the last overview: the
  // panel shows the cluster's part (writer, position, holders) from the overview,
  // refreshed every second, and the copy's part from the description.
  let described = null;
  let overviewRow = null;

  const $ = (id) => document.getElementById(id);

  // A GET of the console's JSON: its `data`. A 401 (the session ended) shows the login
  // form again.
  async function get(path) {
    const res = await fetch(path, {
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { Accept: 'application/json' },
    });
    if (res.status === 401) {
      window.location.reload();
      throw new Error('the session has ended');
    }
    const body = await res.json();
    if (!res.ok) {
      throw new Error(body.error ? body.error.message : `HTTP ${res.status}`);
    }
    return body.data;
  }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === 'class') e.className = v;
      else if (k.startsWith('data-')) e.setAttribute(k, String(v));
      else e[k] = v;
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function rows(tbody, list) {
    tbody.replaceChildren(...list);
  }

  const number = (n) => (n === null || n === undefined ? '—' : Number(n).toLocaleString('en'));

  function ago(ms) {
    if (ms === null || ms === undefined) return 'unknown';
    if (ms < 1000) return `${ms} ms ago`;
    if (ms < 120000) return `${(ms / 1000).toFixed(1)} s ago`;
    return `${Math.round(ms / 60000)} min ago`;
  }

  function lag(ms) {
    return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
  }

  function status(text, stale) {
    const s = $('status');
    s.textContent = text;
    s.classList.toggle('stale', !!stale);
  }

  // --- nodes and workspaces (every second) ---

  function nodeRow(n, leaseMs) {
    const late = n.alive && n.renewed_ms_ago !== null && n.renewed_ms_ago > leaseMs;
    return el('tr', { 'data-node': n.name, 'data-alive': n.alive },
      el('td', { class: 'mono' }, n.name, n.here ? el('span', { class: 'muted' }, ' (this node)') : null),
      el('td', { class: n.alive ? 'alive' : 'dead' }, n.alive ? 'alive' : 'not alive'),
      el('td', { class: 'mono' }, n.version || 'unknown'),
      el('td', { class: late ? 'dead' : '' }, ago(n.renewed_ms_ago)),
      el('td', { class: 'num' }, n.workspaces_held),
      el('td', { class: 'num' }, n.workspaces_written),
      el('td', { class: 'mono' }, n.advertise_url));
  }

  function holdersText(holders) {
    if (!holders || holders.length === 0) return '—';
    return holders
      .map((h) => `${h.node}: ${number(h.position)} (${lag(h.lag_ms)})`)
      .join(', ');
  }

  function workspaceRow(w) {
    const tr = el('tr', {
      class: `clickable${w.id === selected ? ' selected' : ''}`,
      'data-workspace': w.id,
    },
    el('td', { class: 'name' }, w.name || '(no name)'),
    el('td', { class: 'mono id' }, w.id),
    el('td', { class: 'mono writer' }, w.writer || 'none'),
    el('td', { class: 'num position', 'data-position': w.position ?? '' }, number(w.position)),
    el('td', { class: 'holders' }, holdersText(w.holders)));
    tr.addEventListener('click', () => select(w.id));
    return tr;
  }

  async function refreshOverview() {
    const o = await get('/admin/v1/console/overview');
    $('here').textContent = `node ${o.node} · ${o.version}`;
    rows($('nodes').tBodies[0], o.nodes.map((n) => nodeRow(n, o.lease_ms)));
    let list = o.workspaces;
    let count = `${number(o.workspaces_total)} held`;
    if (query) {
      const found = await get(`/admin/v1/console/workspaces?q=${encodeURIComponent(query)}`);
      list = found.workspaces;
      count = `${number(found.found)} found`;
    } else if (o.workspaces_total > o.workspaces.length) {
      count += `, first ${o.workspaces.length} shown: search for the others`;
    }
    $('workspace-count').textContent = `(${count})`;
    rows($('workspaces').tBodies[0], list.map(workspaceRow));
    if (selected) {
      overviewRow = o.workspaces.find((w) => w.id === selected) || null;
      drawDetail();
      // A new writer: its copy's description is wanted now, not at the next refresh.
      if (described && overviewRow && overviewRow.writer !== described.cluster.writer) {
        refreshDetail().catch((e) => status(`error: ${e.message}`, true));
      }
    }
    const at = new Date(o.at_ms);
    status(`updated ${at.toLocaleTimeString('en-GB')}`);
  }

  // --- one workspace (every five seconds while shown) ---

  function select(id) {
    selected = id;
    described = null;
    overviewRow = null;
    $('detail').hidden = false;
    for (const tr of $('workspaces').tBodies[0].rows) {
      tr.classList.toggle('selected', tr.dataset.workspace === id);
    }
    refreshDetail().catch((e) => status(`error: ${e.message}`, true));
  }

  async function refreshDetail() {
    if (!selected) return;
    const id = selected;
    const d = await get(`/admin/v1/console/workspaces/${encodeURIComponent(id)}`);
    if (id !== selected) return;
    described = d;
    drawDetail();
  }

  function drawDetail() {
    const d = described;
    if (!d || d.id !== selected) return;
    const c = d.copy;
    // The overview's row is a second old at most; the description's up to five.
    const cluster = overviewRow
      ? { writer: overviewRow.writer, position: overviewRow.position, holders: overviewRow.holders }
      : d.cluster;
    $('detail-name').textContent = d.name || (c && c.name) || '(no name)';
    $('detail-id').textContent = d.id;
    const parts = [
      `writer ${cluster.writer || 'none'}`,
      `store position ${number(cluster.position)}`,
    ];
    if (c) {
      parts.push(`copy of ${c.node} at ${number(c.position)}`,
        `change log pruned through ${number(c.pruned_through)}`,
        `${number(c.records)} records held`,
        `${number(c.tombstones)} tombstones`);
    }
    $('detail-summary').textContent = parts.join(' · ');
    const err = $('detail-error');
    err.hidden = !d.copy_error && !(c && c.webhooks_error);
    err.textContent = d.copy_error || (c && c.webhooks_error ? `webhooks: ${c.webhooks_error}` : '');
    const counts = c ? Object.entries(c.counts) : [];
    rows($('detail-counts').tBodies[0], counts.map(([entity, n]) =>
      el('tr', {}, el('td', {}, entity), el('td', { class: 'num' }, number(n)))));
    rows($('detail-holders').tBodies[0], (cluster.holders || []).map((h) =>
      el('tr', {}, el('td', { class: 'mono' }, h.node), el('td', { class: 'num' }, number(h.position)),
        el('td', { class: 'num' }, lag(h.lag_ms)))));
    rows($('detail-webhooks').tBodies[0], (c ? c.webhooks : []).map((w) => {
      const a = w.last_attempt;
      const last = a ? `${a.status_code ?? a.error ?? '—'} at ${new Date(a.at_ms).toLocaleTimeString('en-GB')}` : 'none';
      return el('tr', {}, el('td', { class: 'mono' }, w.id), el('td', { class: 'mono' }, w.url),
        el('td', { class: w.status === 'active' ? '' : 'dead' }, w.status + (w.disabled_reason ? ` (${w.disabled_reason})` : '')),
        el('td', { class: 'num' }, number(w.backlog_commits)), el('td', {}, last));
    }));
    rows($('detail-keys').tBodies[0], (c ? c.keys : []).map((k) =>
      el('tr', {}, el('td', { class: 'mono' }, k.id), el('td', {}, k.scopes.join(', ')),
        el('td', {}, k.created_by_email || k.created_by), el('td', {}, k.created_at || '—'),
        el('td', { class: k.revoked ? 'dead' : '' }, k.revoked ? 'revoked' : 'no'))));
  }

  // --- live traffic (every five seconds) ---

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    return e;
  }

  // A chart of series (each {values, cls}) over the window ending at `end`; gaps where
  // a value is null.
  function chart(at, series, end, span, unit) {
    const w = 300;
    const h = 70;
    const top = 12;
    const max = Math.max(0, ...series.flatMap((s) => s.values.filter((v) => v !== null)));
    const scale = max > 0 ? max : 1;
    const root = svg('svg', { class: 'chart', width: w, height: h, viewBox: `0 0 ${w} ${h}` });
    root.append(svg('line', { class: 'axis', x1: 0, y1: h - 1, x2: w, y2: h - 1 }));
    const label = svg('text', { x: 2, y: 10 });
    label.textContent = `${max > 0 ? max.toLocaleString('en', { maximumFractionDigits: 2 }) : 0} ${unit}`;
    root.append(label);
    for (const s of series) {
      let points = [];
      const flush = () => {
        if (points.length > 1) root.append(svg('polyline', { class: s.cls, points: points.join(' ') }));
        else if (points.length === 1) {
          const [x, y] = points[0].split(',');
          root.append(svg('circle', { class: s.cls, cx: x, cy: y, r: 1.5 }));
        }
        points = [];
      };
      s.values.forEach((v, i) => {
        if (v === null) { flush(); return; }
        const x = Math.max(0, w - ((end - at[i]) / span) * w);
        const y = h - 1 - (v / scale) * (h - 1 - top);
        points.push(`${x.toFixed(1)},${y.toFixed(1)}`);
      });
      flush();
    }
    return root;
  }

  function lastOf(values) {
    for (let i = values.length - 1; i >= 0; i -= 1) if (values[i] !== null) return values[i];
    return null;
  }

  async function refreshTraffic() {
    const t = await get('/admin/v1/console/traffic');
    const end = t.at_ms.length ? t.at_ms[t.at_ms.length - 1] : Date.now();
    const first = t.at_ms.length ? t.at_ms[0] - t.sample_every_ms : end;
    const span = Math.min(WINDOW_MS, Math.max(NARROWEST_MS, end - first));
    $('traffic-note').textContent = t.at_ms.length
      ? `(${t.node}; one point per ${t.sample_every_ms / 1000} s, up to the last 15 minutes)`
      : `(${t.node}; the first interval ends ${t.sample_every_ms / 1000} s after the start)`;
    const shown = t.routes.slice(0, ROUTES_SHOWN).map((r) => {
      const p50 = lastOf(r.p50_ms);
      const p99 = lastOf(r.p99_ms);
      const figures = `${number(lastOf(r.rate))}/s · p50 ${p50 ?? '—'} ms · p99 ${p99 ?? '—'} ms · ${number(lastOf(r.errors))} errors`;
      return el('div', { class: 'route', 'data-route': r.route },
        el('div', { class: 'name' }, r.route),
        el('div', { class: 'figures' }, figures),
        chart(t.at_ms, [{ values: r.rate, cls: 'rate' }], end, span, 'req/s'),
        chart(t.at_ms, [{ values: r.p50_ms, cls: 'p50' }, { values: r.p99_ms, cls: 'p99' }], end, span, 'ms (p50 green, p99 red)'));
    });
    $('traffic').replaceChildren(...(shown.length ? shown : [el('p', { class: 'muted' }, 'No API requests in the intervals kept.')]));
  }

  // Each refresh runs again `every` after the last ended, so that a slow answer never
  // piles requests up.
  function every(ms, refresh) {
    const run = async () => {
      try {
        await refresh();
      } catch (e) {
        status(`error: ${e.message}`, true);
      }
      setTimeout(run, ms);
    };
    run();
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('search').addEventListener('input', (e) => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => {
        query = e.target.value.trim();
        refreshOverview().catch((err) => status(`error: ${err.message}`, true));
      }, SEARCH_DELAY_MS);
    });
    $('detail-close').addEventListener('click', () => {
      selected = null;
      described = null;
      $('detail').hidden = true;
      for (const tr of $('workspaces').tBodies[0].rows) tr.classList.remove('selected');
    });
    every(OVERVIEW_EVERY_MS, refreshOverview);
    every(TRAFFIC_EVERY_MS, refreshTraffic);
    every(DETAIL_EVERY_MS, refreshDetail);
  });
})();
