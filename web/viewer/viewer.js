// stripeline's live viewer: draws what the daemon pushes on /events
// (server-sent events: "info" once per run of each head, "row" ~25 times a
// second per head, "health" once a second). One panel per head: the single
// head of a one-head daemon, each [[head]] of a daemon of several, and their
// merged series (":merged") with [merge]; "info" and "row" name their head.
// Read-only; nothing is fetched but this server's own files. The colour map
// is the daemon's (io/colour_map.h, served as /colour-map.js), so a height
// has the same colour here as in `stripeline render`.
'use strict';
(function () {
  const MAP = window.STRIPELINE_COLOUR_MAP;       // 256 [r, g, b], low to high
  const NO_DATA = window.STRIPELINE_NO_DATA_COLOUR;
  const MERGED = ':merged';
  const ROWS = 256, INTENSITY_ROWS = 128;
  // Rows arrive ~25 times a second; they are drawn 10 times a second, a few
  // at a time (each redraw of the page costs the browser far more than a row).
  const DRAW_MS = 100;

  const $ = (id) => document.getElementById(id);
  const panels = new Map();  // head name -> panel, in the order they came

  // What the page knows, also read by the browser tests (tests/browser):
  // per head in heads[name]; info, range, unit, lastRow, heldFrames,
  // firstUpdateAt and lastUpdateAt of the first head at the top level.
  const state = window.stripelineViewer = {
    connected: false, updates: 0, health: 0, reconnects: 0,
    paused: false,   // the display frozen (rows arriving meanwhile are counted, not drawn)
    heads: {},       // name -> { updates, info, range, unit, lastRow, heldFrames (the frame id of each waterfall row, newest first) }
    order: [],       // head names, as their panels were made
  };
  for (const key of ['info', 'range', 'unit', 'lastRow', 'heldFrames', 'firstUpdateAt', 'lastUpdateAt']) {
    Object.defineProperty(state, key, {
      get: () => (state.order.length ? state.heads[state.order[0]][key] : (key === 'unit' ? 'px' : key === 'heldFrames' ? [] : null)),
    });
  }

  function setConnection(text, cls) {
    const el = $('connection');
    el.textContent = text;
    el.className = 'badge ' + cls;
  }

  // A range with round ends: about five steps of 1, 2 or 5 x 10^k.
  function niceRange(lo, hi) {
    if (!(hi > lo)) { lo -= 0.5; hi += 0.5; }
    const raw = (hi - lo) / 5, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
    return { lo: Math.floor(lo / step) * step, hi: Math.ceil(hi / step) * step, step: step };
  }

  function fmt(v, step) {
    const d = Math.max(0, -Math.floor(Math.log10(step)));
    return v.toFixed(Math.min(d, 6));
  }

  function colourOf(h, range) {
    if (h === null || !(range.hi > range.lo)) return NO_DATA;
    const t = Math.min(1, Math.max(0, (h - range.lo) / (range.hi - range.lo)));
    return MAP[Math.round(t * 255)];
  }

  function drawScale(c) {
    const ctx = c.getContext('2d'), img = ctx.createImageData(256, 1);
    for (let i = 0; i < 256; ++i) img.data.set([MAP[i][0], MAP[i][1], MAP[i][2], 255], i * 4);
    for (let y = 0; y < c.height; ++y) ctx.putImageData(img, 0, y);
  }

  function scroll(ctx, canvas, k) {
    ctx.drawImage(canvas, 0, 0, canvas.width, canvas.height - k, 0, k, canvas.width, canvas.height - k);
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  }

  function cell(v, digits) {
    if (v === undefined || v === null) return '\u2013';
    return typeof v === 'number' ? v.toFixed(digits === undefined ? 0 : digits) : String(v);
  }

  function several() { return panels.size > 1; }

  // The latest profile: heights as dots on the run's scale, intensity and
  // quality as strips below; x in the run's unit (each bin's X where the rows carry it).
  function drawProfile(profileCanvas, pctx, s, bins, row, label) {
    const w = profileCanvas.width, h = profileCanvas.height, pad = 40;
    pctx.fillStyle = '#101214';
    pctx.fillRect(0, 0, w, h);
    const r = s.range, info = s.info;
    if (!r || !info) return;
    const xs = (b) => (row.x ? row.x[b] : info.x0 + info.dx * b);
    let xlo = Infinity, xhi = -Infinity;
    for (let b = 0; b < bins; ++b) { const x = xs(b); if (x !== null) { xlo = Math.min(xlo, x); xhi = Math.max(xhi, x); } }
    if (!(xhi > xlo)) return;
    const X = (x) => pad + (x - xlo) / (xhi - xlo) * (w - pad - 8);
    const plotH = h - 70, Y = (z) => 8 + (1 - (z - r.lo) / (r.hi - r.lo)) * plotH;
    // axes and labels in the run's unit
    pctx.strokeStyle = '#444'; pctx.fillStyle = '#9aa0a6'; pctx.font = '11px sans-serif';
    for (let z = r.lo; z <= r.hi + r.step / 2; z += r.step) {
      pctx.beginPath(); pctx.moveTo(pad, Y(z)); pctx.lineTo(w - 8, Y(z)); pctx.stroke();
      pctx.fillText(fmt(z, r.step), 2, Y(z) + 4);
    }
    pctx.fillText('x ' + fmt(xlo, 1) + ' \u2026 ' + fmt(xhi, 1) + ' ' + s.unit, pad, h - 2);
    // intensity (0..max of the row) and quality (0..max) as strips below the heights
    let imax = 1, qmax = 1;
    for (let b = 0; b < bins; ++b) { if (row.i[b] !== null) imax = Math.max(imax, row.i[b]); if (row.q[b] !== null) qmax = Math.max(qmax, row.q[b]); }
    pctx.strokeStyle = '#b0b0b0'; pctx.beginPath();
    let pen = false;
    for (let b = 0; b < bins; ++b) {
      const v = row.i[b], x = xs(b);
      if (v === null || x === null) { pen = false; continue; }
      const y = plotH + 40 - v / imax * 28;
      if (pen) pctx.lineTo(X(x), y); else pctx.moveTo(X(x), y);
      pen = true;
    }
    pctx.stroke();
    pctx.fillStyle = '#3fb950';
    for (let b = 0; b < bins; ++b) {
      const v = row.q[b], x = xs(b);
      if (v === null || x === null) continue;
      const bh = v / qmax * 14;
      pctx.fillRect(X(x), h - 16 - bh, 1, bh);
    }
    pctx.fillStyle = '#7fd4ff';
    for (let b = 0; b < bins; ++b) {
      const z = row.h[b], x = xs(b);
      if (z === null || x === null) continue;
      pctx.fillRect(X(x) - 1, Y(z) - 1, 2, 2);
    }
    label.textContent = 'frame ' + row.frame + ' (row ' + row.index + ')';
  }

  // One head's profile, waterfalls and health line.
  function makePanel(name) {
    const root = $('head-template').content.firstElementChild.cloneNode(true);
    root.dataset.head = name;
    $('main').insertBefore(root, $('health-panel'));
    const q = (cls) => root.querySelector('.' + cls);
    const heightsCanvas = root.querySelector('canvas.heights'), intensityCanvas = root.querySelector('canvas.intensity');
    const profileCanvas = root.querySelector('canvas.profile');
    const hctx = heightsCanvas.getContext('2d'), ictx = intensityCanvas.getContext('2d'), pctx = profileCanvas.getContext('2d');
    const s = { name: name, updates: 0, info: null, range: null, unit: 'px', lastRow: null, heldFrames: [], firstUpdateAt: 0, lastUpdateAt: 0 };
    // The rows held (newest first): heights for redrawing when the colour range changes.
    let bins = 0, held = [], heldMin = [], heldMax = [], pending = [];
    drawScale(root.querySelector('canvas.scale-bar'));

    function paintRows(ctx, y, rows, colour) {
      if (!rows.length) return;
      const img = ctx.createImageData(bins, rows.length);
      for (let r = 0; r < rows.length; ++r) {
        const values = rows[r], o = r * bins * 4;
        for (let b = 0; b < bins; ++b) {
          const c = colour(values[b]);
          img.data[o + b * 4] = c[0]; img.data[o + b * 4 + 1] = c[1]; img.data[o + b * 4 + 2] = c[2]; img.data[o + b * 4 + 3] = 255;
        }
      }
      ctx.putImageData(img, 0, y);
    }

    function updateRange() {
      let lo = Infinity, hi = -Infinity;
      for (let i = 0; i < held.length; ++i) { lo = Math.min(lo, heldMin[i]); hi = Math.max(hi, heldMax[i]); }
      if (!isFinite(lo)) return false;
      const r = niceRange(lo, hi);
      if (s.range && r.lo === s.range.lo && r.hi === s.range.hi) return false;
      s.range = r;
      q('scale-lo').textContent = fmt(r.lo, r.step) + ' ' + s.unit;
      q('scale-hi').textContent = fmt(r.hi, r.step) + ' ' + s.unit;
      return true;
    }

    function redrawHeights() {
      hctx.fillStyle = 'rgb(' + NO_DATA.join(',') + ')';
      hctx.fillRect(0, 0, heightsCanvas.width, heightsCanvas.height);
      if (s.range) paintRows(hctx, 0, held, (h) => colourOf(h, s.range));
    }

    function title() {
      const info = s.info, what = name === MERGED ? 'merged series' : 'head ' + name;
      if (!info) return what;
      return what + ' \u00b7 ' + info.width + (name === MERGED ? ' cells' : ' columns') + ' shown as ' + info.bins +
        ' \u00b7 heights in ' + info.unit + ' \u00b7 calibration ' + info.calibration;
    }

    function onInfo(info) {
      s.info = info;
      s.unit = info.unit;
      bins = info.bins;
      held = []; heldMin = []; heldMax = []; s.heldFrames = []; s.range = null; pending = [];
      for (const c of [heightsCanvas, intensityCanvas]) c.width = bins;
      heightsCanvas.height = ROWS; intensityCanvas.height = INTENSITY_ROWS;
      redrawHeights();
      ictx.fillStyle = 'rgb(' + NO_DATA.join(',') + ')';
      ictx.fillRect(0, 0, bins, INTENSITY_ROWS);
      q('scale-lo').textContent = q('scale-hi').textContent = '\u2013';
      retitle();
    }

    // The single head keeps the page's header line; several have a title each.
    function retitle() {
      if (several()) {
        q('head-title').textContent = title();
      } else if (s.info) {
        $('run').textContent = s.info.width + ' columns shown as ' + s.info.bins + ' \u00b7 heights in ' + s.info.unit +
          ' \u00b7 calibration ' + s.info.calibration;
      }
    }

    function onRow(row) {
      if (!bins || row.h.length !== bins) return;
      const now = performance.now();
      if (!s.updates) s.firstUpdateAt = now;
      s.lastUpdateAt = now;
      s.updates += 1;
      state.updates += 1;
      if (state.paused) return;
      pending.push(row);
      if (pending.length > ROWS) pending.shift();
    }

    function drawPending() {
      if (state.paused || !pending.length) return;
      const rows = pending.reverse();  // newest first, as the canvas
      pending = [];
      const k = Math.min(rows.length, ROWS);
      for (let r = k - 1; r >= 0; --r) {
        const h = rows[r].h;
        let lo = Infinity, hi = -Infinity;
        for (const v of h) if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
        held.unshift(h); heldMin.unshift(lo); heldMax.unshift(hi); s.heldFrames.unshift(rows[r].frame);
      }
      held.length = heldMin.length = heldMax.length = s.heldFrames.length = Math.min(held.length, ROWS);
      if (updateRange()) {
        redrawHeights();
      } else if (s.range) {
        scroll(hctx, heightsCanvas, k);
        paintRows(hctx, 0, held.slice(0, k), (h) => colourOf(h, s.range));
      }
      scroll(ictx, intensityCanvas, Math.min(k, INTENSITY_ROWS));
      paintRows(ictx, 0, rows.slice(0, Math.min(k, INTENSITY_ROWS)).map((row) => {
        let imax = 1;
        for (const v of row.i) if (v !== null) imax = Math.max(imax, v);
        return row.i.map((v) => (v === null ? null : v / imax * 255));
      }), (v) => (v === null ? NO_DATA : [v, v, v]));
      drawProfile(profileCanvas, pctx, s, bins, rows[0], q('profile-label'));
      s.lastRow = rows[0];
    }

    // This head's line of the health event (several heads: under its title).
    function onHealth(d) {
      if (!several() || !d) { q('head-health').textContent = ''; return; }
      q('head-health').textContent = [cell(d.rows_per_s, 0) + ' rows/s', 'lost ' + cell(d.lost), 'dropped ' + cell(d.dropped),
        'latency ' + cell(d.latency_ms, 2) + ' ms', 'camera ' + cell(d.camera), cell(d.state)].join(' \u00b7 ');
    }

    state.heads[name] = s;
    state.order.push(name);
    return { name: name, onInfo: onInfo, onRow: onRow, drawPending: drawPending, onHealth: onHealth, retitle: retitle };
  }

  function panel(name) {
    name = name || 'head';
    let p = panels.get(name);
    if (!p) {
      p = makePanel(name);
      panels.set(name, p);
      $('main').className = several() ? 'several' : '';
      $('main').style.setProperty('--panels', String(panels.size));
      if (several()) { $('run').textContent = panels.size + ' panels'; for (const o of panels.values()) o.retitle(); }
    }
    return p;
  }

  function onHealth(h) {
    state.health += 1;
    state.lastHealth = h;
    const heads = h.heads || [];
    const rows = [['state', h.state], ['live viewers', cell(h.viewers) + ' (dropped updates ' + cell(h.viewer_dropped) + ')']];
    if (h.merge) rows.push(['merge', cell(h.merge.state) + ' \u00b7 ' + cell(h.merge.rows_per_s, 0) + ' merged rows/s (in the viewer)']);
    let html = '<table><tbody>' + rows.map((r) => '<tr><th>' + r[0] + '</th><td>' + escapeHtml(r[1]) + '</td></tr>').join('') + '</tbody></table>';
    html += '<table><thead><tr><th>head</th><th>rows/s</th><th>frames</th><th>lost</th><th>dropped (stream)</th>' +
      '<th>latency ms (arrival \u2192 profile)</th><th>camera</th><th>series</th><th>calibration</th><th>source</th></tr></thead><tbody>';
    for (const d of heads) {
      html += '<tr>' + [d.name, cell(d.rows_per_s, 0), cell(d.frames), cell(d.lost), cell(d.dropped), cell(d.latency_ms, 2), d.camera,
        d.series, d.calibration, d.source].map((v) => '<td>' + escapeHtml(cell(v)) + '</td>').join('') + '</tr>';
    }
    $('health').innerHTML = html + '</tbody></table>';
    for (const p of panels.values()) p.onHealth(p.name === MERGED ? h.merge : heads.find((d) => d.name === p.name));
  }

  // EventSource reconnects by itself after a network error (the daemon
  // restarting); after an HTTP refusal (503: too many viewers) it gives up,
  // so the page opens a new one a little later.
  let source = null;
  function connect() {
    source = new EventSource('/events');
    source.onopen = () => { state.connected = true; setConnection('live', 'ok'); };
    source.onerror = () => {
      state.connected = false;
      if (source.readyState === EventSource.CLOSED) {
        setConnection('refused or unavailable; retrying', 'bad');
        setTimeout(connect, 2000);
      } else {
        setConnection('reconnecting', 'wait');
      }
      state.reconnects += 1;
    };
    source.addEventListener('info', (e) => { const d = JSON.parse(e.data); panel(d.head).onInfo(d); });
    source.addEventListener('row', (e) => { const d = JSON.parse(e.data); const p = panels.get(d.head || 'head'); if (p) p.onRow(d); });
    source.addEventListener('health', (e) => onHealth(JSON.parse(e.data)));
  }

  $('pause').addEventListener('click', () => {
    state.paused = !state.paused;
    $('pause').textContent = state.paused ? 'resume' : 'pause';
    $('pause').className = state.paused ? 'on' : '';
  });
  setInterval(() => { for (const p of panels.values()) p.drawPending(); }, DRAW_MS);
  connect();
})();
