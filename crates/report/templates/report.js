// The transcript viewer: filters and pages through the items embedded in #transcripts-data.
// Texts are set with textContent only (never parsed as HTML).
(function () {
  'use strict';
  var T = JSON.parse(document.getElementById('transcripts-data').textContent);
  var S = T.strings;
  var F = {};
  T.fields.forEach(function (f, i) { F[f] = i; });
  var PAGE = 25;
  var byId = function (id) { return document.getElementById(id); };
  var state = { run: '', task: '', status: '', metric: T.metrics.length ? T.metrics[0] : '', min: '', max: '', id: '', page: 0 };
  var matches = [];

  function option(select, value, text) {
    var o = document.createElement('option');
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  }
  T.runs.forEach(function (r, i) { option(byId('f-run'), String(i), r.key + ' · ' + r.label); });
  T.tasks.forEach(function (t, i) { option(byId('f-task'), String(i), t); });
  if (!T.metrics.length) { option(byId('f-metric'), '', 'no metrics'); }
  T.metrics.forEach(function (m) { option(byId('f-metric'), m, m); });

  function statusOf(it) {
    var g = T.generation[it[F.generation]];
    if (g !== 'generated') { return g; }
    return it[F.scoring];
  }

  function numberOrNull(text) {
    if (text === '' || text === null) { return null; }
    var v = Number(text);
    return isFinite(v) ? v : null;
  }

  function applyFilters() {
    var run = state.run === '' ? -1 : Number(state.run);
    var task = state.task === '' ? -1 : Number(state.task);
    var m = T.metrics.indexOf(state.metric);
    var lo = numberOrNull(state.min), hi = numberOrNull(state.max);
    var needle = state.id.trim().toLowerCase();
    matches = [];
    for (var i = 0; i < T.items.length; i++) {
      var it = T.items[i];
      if (run >= 0 && it[F.run] !== run) { continue; }
      if (task >= 0 && it[F.task] !== task) { continue; }
      if (state.status && statusOf(it) !== state.status) { continue; }
      if (needle && it[F.scenario_id].toLowerCase().indexOf(needle) < 0) { continue; }
      if (lo !== null || hi !== null) {
        var v = m >= 0 ? it[F.scores][m] : null;
        if (v === null || v === undefined) { continue; }
        if (lo !== null && v < lo) { continue; }
        if (hi !== null && v > hi) { continue; }
      }
      matches.push(i);
    }
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }

  function fmt(v) { return v === null || v === undefined ? '–' : v.toFixed(4); }

  function card(i) {
    var it = T.items[i];
    var run = T.runs[it[F.run]];
    var lang = it[F.lang] === 'zh' ? 'zh-Hans' : it[F.lang];
    var m = T.metrics.indexOf(state.metric);
    var score = m >= 0 ? it[F.scores][m] : null;
    var a = el('article', 'item');
    a.dataset.index = String(i);
    a.dataset.run = String(it[F.run]);
    a.dataset.task = T.tasks[it[F.task]];
    a.dataset.status = statusOf(it);
    if (score !== null && score !== undefined) { a.dataset.score = String(score); }
    var head = el('div', 'head');
    var b = el('b', null, it[F.scenario_id]);
    head.appendChild(b);
    head.appendChild(el('span', null, run.key + ' · ' + run.label));
    head.appendChild(el('span', null, T.tasks[it[F.task]]));
    head.appendChild(el('span', null, it[F.lang]));
    head.appendChild(el('span', null, statusOf(it)));
    var open = el('a', 'view', 'open in h2htalk view ↗');
    open.href = T.view + '/item/' + encodeURIComponent(run.id) + '/' + encodeURIComponent(it[F.scenario_id]);
    head.appendChild(open);
    if (state.metric) { head.appendChild(el('span', null, state.metric + ' ' + fmt(score))); }
    a.appendChild(head);
    var texts = el('div', 'texts');
    var ans = el('div');
    ans.lang = lang;
    ans.appendChild(el('h4', null, 'Answer'));
    if (it[F.answer] !== null) {
      ans.appendChild(document.createTextNode(S[it[F.answer]]));
    } else if (it[F.error] !== null) {
      ans.appendChild(el('span', 'failed', 'failed: ' + S[it[F.error]]));
    } else {
      ans.appendChild(el('span', 'muted', 'not generated yet'));
    }
    var ref = el('div');
    ref.lang = lang;
    ref.appendChild(el('h4', null, 'Reference'));
    ref.appendChild(document.createTextNode(S[it[F.reference]]));
    texts.appendChild(ans);
    texts.appendChild(ref);
    a.appendChild(texts);
    var scores = it[F.scores];
    if (scores.some(function (v) { return v !== null; })) {
      var t = el('table', 'scores');
      var hr = el('tr'), vr = el('tr');
      T.metrics.forEach(function (name, k) {
        if (scores[k] === null) { return; }
        hr.appendChild(el('th', null, name));
        vr.appendChild(el('td', 'num', fmt(scores[k])));
      });
      t.appendChild(hr);
      t.appendChild(vr);
      a.appendChild(t);
    }
    var d = el('details', 'prompt');
    d.appendChild(el('summary', null, 'Prompt (' + it[F.prompt].length + ' messages)'));
    d.addEventListener('toggle', function () {
      if (d.open && d.childNodes.length === 1) {
        it[F.prompt].forEach(function (msg) {
          var p = el('div', 'msg');
          p.lang = lang;
          p.appendChild(el('span', 'role', msg[0] + ': '));
          p.appendChild(document.createTextNode(S[msg[1]]));
          d.appendChild(p);
        });
      }
    });
    a.appendChild(d);
    return a;
  }

  function pages() { return Math.max(1, Math.ceil(matches.length / PAGE)); }

  function render() {
    state.page = Math.min(Math.max(0, state.page), pages() - 1);
    var list = byId('v-list');
    var frag = document.createDocumentFragment();
    var start = state.page * PAGE;
    for (var k = start; k < Math.min(matches.length, start + PAGE); k++) { frag.appendChild(card(matches[k])); }
    list.replaceChildren(frag);
    byId('p-status').textContent = matches.length
      ? 'items ' + (start + 1) + '–' + Math.min(matches.length, start + PAGE) + ' of ' + matches.length + ' · page ' + (state.page + 1) + ' of ' + pages()
      : 'no item matches';
    byId('p-page').value = String(state.page + 1);
    byId('p-page').max = String(pages());
    byId('p-prev').disabled = byId('p-first').disabled = state.page === 0;
    byId('p-next').disabled = byId('p-last').disabled = state.page >= pages() - 1;
    document.body.dataset.matches = String(matches.length);
    document.body.dataset.page = String(state.page + 1);
  }

  function refilter() { state.page = 0; applyFilters(); render(); }

  [['f-run', 'run'], ['f-task', 'task'], ['f-status', 'status'], ['f-metric', 'metric']].forEach(function (p) {
    byId(p[0]).addEventListener('change', function (e) { state[p[1]] = e.target.value; refilter(); });
  });
  [['f-min', 'min'], ['f-max', 'max'], ['f-id', 'id']].forEach(function (p) {
    byId(p[0]).addEventListener('input', function (e) { state[p[1]] = e.target.value; refilter(); });
  });
  byId('p-first').addEventListener('click', function () { state.page = 0; render(); });
  byId('p-prev').addEventListener('click', function () { state.page -= 1; render(); });
  byId('p-next').addEventListener('click', function () { state.page += 1; render(); });
  byId('p-last').addEventListener('click', function () { state.page = pages() - 1; render(); });
  byId('p-page').addEventListener('change', function (e) {
    var v = parseInt(e.target.value, 10);
    if (isFinite(v)) { state.page = v - 1; }
    render();
  });

  applyFilters();
  render();
  document.body.dataset.ready = '1';
})();
