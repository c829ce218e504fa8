// stripeline's live viewer: draws what the daemon pushes on /events
// (server-sent events: "info" once per run, "row" ~25 times a second,
// "health" once a second). Read-only; nothing is fetched but this server's
// own files. The colour map is the daemon's (io/colour_map.h, served as
// /colour-map.js), so a height has the same colour here as in `stripeline render`.
'use strict';
(function () {
  const MAP = window.STRIPELINE_COLOUR_MAP;       // 256 [r, g, b], low to high
  const NO_DATA = window.STRIPELINE_NO_DATA_COLOUR;
  const ROWS = 256, INTENSITY_ROWS = 128;
  // Rows arrive ~25 times a second; they are drawn 10 times a second, a few
  // at a time (each redraw of the page costs the browser far more than a row).
  const DRAW_MS = 100;

  // What the page knows, also read by the browser tests (tests/browser).
  const state = window.stripelineViewer = {
    connected: false, updates: 0, health: 0, info: null, range: null, unit: 'px',
    lastRow: null, reconnects: 0, firstUpdateAt: 0, lastUpdateAt: 0,
    paused: false,   // the display frozen (rows arriving meanwhile are counted, not drawn)
    heldFrames: [],  // frame index of each waterfall row, newest (top) first
  };

  const $ = (id) => document.getElementById(id);
  const heightsCanvas = $('heights'), intensityCanvas = $('intensity'), profileCanvas = $('profile');
  const hctx = heightsCanvas.getContext('2d'), ictx = intensityCanvas.getContext('2d'), pctx = profileCanvas.getContext('2d');

  // The rows held (newest first): heights for redrawing when the colour range changes.
  let bins = 0, held = [], heldMin = [], heldMax = [];

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

  function drawScale() {
    const c = $('scale-bar'), ctx = c.getContext('2d'), img = ctx.createImageData(256, 1);
    for (let i = 0; i < 256; ++i) img.data.set([MAP[i][0], MAP[i][1], MAP[i][2], 255], i * 4);
    for (let y = 0; y < c.height; ++y) ctx.putImageData(img, 0, y);
  }

  // rows[0] at canvas row y, rows[1] below it, ...
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

  function scroll(ctx, canvas, k) {
    ctx.drawImage(canvas, 0, 0, canvas.width, canvas.height - k, 0, k, canvas.width, canvas.height - k);
  }

  function updateRange() {
    let lo = Infinity, hi = -Infinity;
    for (let i = 0; i < held.length; ++i) { lo = Math.min(lo, heldMin[i]); hi = Math.max(hi, heldMax[i]); }
    if (!isFinite(lo)) return false;
    const r = niceRange(lo, hi);
    if (state.range && r.lo === state.range.lo && r.hi === state.range.hi) return false;
    state.range = r;
    $('scale-lo').textContent = fmt(r.lo, r.step) + ' ' + state.unit;
    $('scale-hi').textContent = fmt(r.hi, r.step) + ' ' + state.unit;
    return true;
  }

  function redrawHeights() {
    hctx.fillStyle = 'rgb(' + NO_DATA.join(',') + ')';
    hctx.fillRect(0, 0, heightsCanvas.width, heightsCanvas.height);
    if (state.range) paintRows(hctx, 0, held, (h) => colourOf(h, state.range));
  }

  function onInfo(info) {
    state.info = info;
    state.unit = info.unit;
    bins = info.bins;
    held = []; heldMin = []; heldMax = []; state.heldFrames = []; state.range = null; pending = [];
    for (const c of [heightsCanvas, intensityCanvas]) c.width = bins;
    heightsCanvas.height = ROWS; intensityCanvas.height = INTENSITY_ROWS;
    redrawHeights();
    ictx.fillStyle = 'rgb(' + NO_DATA.join(',') + ')';
    ictx.fillRect(0, 0, bins, INTENSITY_ROWS);
    $('run').textContent = info.width + ' columns shown as ' + bins + ' \u00b7 heights in ' + info.unit +
      ' \u00b7 calibration ' + info.calibration;
  }

  function drawProfile(row) {
    const w = profileCanvas.width, h = profileCanvas.height, pad = 40;
    pctx.fillStyle = '#101214';
    pctx.fillRect(0, 0, w, h);
    const r = state.range, info = state.info;
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
    pctx.fillText('x ' + fmt(xlo, 1) + ' \u2026 ' + fmt(xhi, 1) + ' ' + state.unit, pad, h - 2);
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
    $('profile-label').textContent = 'frame ' + row.frame + ' (row ' + row.index + ')';
  }

  let pending = [];  // rows received, not drawn yet (oldest first)

  function onRow(row) {
    if (!bins || row.h.length !== bins) return;
    const now = performance.now();
    if (!state.updates) state.firstUpdateAt = now;
    state.lastUpdateAt = now;
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
      held.unshift(h); heldMin.unshift(lo); heldMax.unshift(hi); state.heldFrames.unshift(rows[r].index);
    }
    held.length = heldMin.length = heldMax.length = state.heldFrames.length = Math.min(held.length, ROWS);
    if (updateRange()) {
      redrawHeights();
    } else if (state.range) {
      scroll(hctx, heightsCanvas, k);
      paintRows(hctx, 0, held.slice(0, k), (h) => colourOf(h, state.range));
    }
    scroll(ictx, intensityCanvas, Math.min(k, INTENSITY_ROWS));
    paintRows(ictx, 0, rows.slice(0, Math.min(k, INTENSITY_ROWS)).map((row) => {
      let imax = 1;
      for (const v of row.i) if (v !== null) imax = Math.max(imax, v);
      return row.i.map((v) => (v === null ? null : v / imax * 255));
    }), (v) => (v === null ? NO_DATA : [v, v, v]));
    drawProfile(rows[0]);
    state.lastRow = rows[0];
  }

  function cell(v, digits) {
    if (v === undefined || v === null) return '\u2013';
    return typeof v === 'number' ? v.toFixed(digits === undefined ? 0 : digits) : String(v);
  }

  function onHealth(h) {
    state.health += 1;
    state.lastHealth = h;
    const heads = h.heads || [];
    const rows = [['state', h.state], ['live viewers', cell(h.viewers) + ' (dropped updates ' + cell(h.viewer_dropped) + ')']];
    let html = '<table><tbody>' + rows.map((r) => '<tr><th>' + r[0] + '</th><td>' + escapeHtml(r[1]) + '</td></tr>').join('') + '</tbody></table>';
    html += '<table><thead><tr><th>head</th><th>rows/s</th><th>frames</th><th>lost</th><th>dropped (stream)</th>' +
      '<th>latency ms (arrival \u2192 profile)</th><th>camera</th><th>series</th><th>calibration</th><th>source</th></tr></thead><tbody>';
    for (const d of heads) {
      html += '<tr>' + [d.name, cell(d.rows_per_s, 0), cell(d.frames), cell(d.lost), cell(d.dropped), cell(d.latency_ms, 2), d.camera,
        d.series, d.calibration, d.source].map((v) => '<td>' + escapeHtml(cell(v)) + '</td>').join('') + '</tr>';
    }
    $('health').innerHTML = html + '</tbody></table>';
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
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
    source.addEventListener('info', (e) => onInfo(JSON.parse(e.data)));
    source.addEventListener('row', (e) => onRow(JSON.parse(e.data)));
    source.addEventListener('health', (e) => onHealth(JSON.parse(e.data)));
  }

  $('pause').addEventListener('click', () => {
    state.paused = !state.paused;
    $('pause').textContent = state.paused ? 'resume' : 'pause';
    $('pause').className = state.paused ? 'on' : '';
  });
  drawScale();
  setInterval(drawPending, DRAW_MS);
  connect();
})();
