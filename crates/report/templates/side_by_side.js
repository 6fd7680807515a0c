// Side by side: two runs' answers to the same scenarios, with the reference and every metric's
// difference B − A, sorted by a chosen metric. Reads #transcripts-data; texts via textContent only.
(function () {
  'use strict';
  var T = JSON.parse(document.getElementById('transcripts-data').textContent);
  var S = T.strings;
  var F = {};
  T.fields.forEach(function (f, i) { F[f] = i; });
  var PAGE = 20;
  var byId = function (id) { return document.getElementById(id); };
  if (!byId('side')) { return; }
  var state = { a: 0, b: T.runs.length > 1 ? 1 : 0, task: '', metric: T.metrics.length ? T.metrics[0] : '', order: 'abs', page: 0 };
  var pairs = [];
  // Items of each run by "task/scenario".
  var byRun = T.runs.map(function () { return {}; });
  T.items.forEach(function (it, i) { byRun[it[F.run]][it[F.task] + '/' + it[F.scenario_id]] = i; });

  function option(select, value, text) {
    var o = document.createElement('option');
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  }
  T.runs.forEach(function (r, i) {
    option(byId('s-a'), String(i), r.key + ' · ' + r.label);
    option(byId('s-b'), String(i), r.key + ' · ' + r.label);
  });
  T.tasks.forEach(function (t, i) { option(byId('s-task'), String(i), t); });
  if (!T.metrics.length) { option(byId('s-metric'), '', 'no metrics'); }
  T.metrics.forEach(function (m) { option(byId('s-metric'), m, m); });
  byId('s-a').value = String(state.a);
  byId('s-b').value = String(state.b);

  function val(v) { return v === null || v === undefined ? null : v; }
  function fmt(v) { return v === null ? '–' : v.toFixed(4); }

  function pair() {
    var a = byRun[state.a] || {}, b = byRun[state.b] || {};
    var m = T.metrics.indexOf(state.metric);
    var task = state.task === '' ? -1 : Number(state.task);
    var onlyA = 0, onlyB = 0;
    pairs = [];
    Object.keys(a).forEach(function (k) {
      var ia = a[k], ib = b[k];
      if (ib === undefined) { onlyA += 1; return; }
      if (task >= 0 && T.items[ia][F.task] !== task) { return; }
      var va = m >= 0 ? val(T.items[ia][F.scores][m]) : null;
      var vb = m >= 0 ? val(T.items[ib][F.scores][m]) : null;
      pairs.push({ a: ia, b: ib, diff: va !== null && vb !== null ? vb - va : null });
    });
    Object.keys(b).forEach(function (k) { if (a[k] === undefined) { onlyB += 1; } });
    var key = {
      abs: function (p) { return -Math.abs(p.diff); },
      desc: function (p) { return -p.diff; },
      asc: function (p) { return p.diff; }
    }[state.order];
    pairs.sort(function (x, y) {
      if (key) {
        if (x.diff === null || y.diff === null) {
          if (x.diff !== y.diff) { return x.diff === null ? 1 : -1; }
        } else {
          var d = key(x) - key(y);
          if (d !== 0) { return d; }
        }
      }
      return x.a - y.a;
    });
    state.onlyA = onlyA;
    state.onlyB = onlyB;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }

  function answerBox(title, it, lang) {
    var d = el('div');
    d.lang = lang;
    d.appendChild(el('h4', null, title));
    if (it[F.answer] !== null && S[it[F.answer]] === '') {
      d.appendChild(el('span', 'muted', 'empty answer'));
    } else if (it[F.answer] !== null) {
      d.appendChild(document.createTextNode(S[it[F.answer]]));
    } else if (it[F.error] !== null) {
      d.appendChild(el('span', 'failed', 'failed: ' + S[it[F.error]]));
    } else {
      d.appendChild(el('span', 'muted', 'not generated yet'));
    }
    return d;
  }

  function card(p) {
    var A = T.items[p.a], B = T.items[p.b];
    var ra = T.runs[state.a], rb = T.runs[state.b];
    var lang = A[F.lang] === 'zh' ? 'zh-Hans' : A[F.lang];
    var c = el('article', 'pair');
    c.dataset.scenario = A[F.scenario_id];
    c.dataset.task = T.tasks[A[F.task]];
    if (p.diff !== null) { c.dataset.diff = String(p.diff); }
    var head = el('div', 'head');
    head.appendChild(el('b', null, A[F.scenario_id]));
    head.appendChild(el('span', null, T.tasks[A[F.task]]));
    head.appendChild(el('span', null, A[F.lang]));
    if (state.metric) { head.appendChild(el('span', null, state.metric + ' B − A ' + fmt(p.diff))); }
    var open = el('a', 'view', 'side by side in h2htalk view ↗');
    open.href = T.view + '/side?runs=' + encodeURIComponent(ra.id + ',' + rb.id) + '&task=' +
      encodeURIComponent(T.tasks[A[F.task]]) + '&scenario=' + encodeURIComponent(A[F.scenario_id]);
    head.appendChild(open);
    c.appendChild(head);
    var texts = el('div', 'texts three');
    texts.appendChild(answerBox('A: ' + ra.key + ' · ' + ra.label, A, lang));
    texts.appendChild(answerBox('B: ' + rb.key + ' · ' + rb.label, B, lang));
    var ref = el('div');
    ref.lang = lang;
    ref.appendChild(el('h4', null, 'Reference'));
    ref.appendChild(document.createTextNode(S[A[F.reference]]));
    texts.appendChild(ref);
    c.appendChild(texts);
    var t = el('table', 'scores');
    var h = el('tr');
    ['', 'A', 'B', 'B − A'].forEach(function (x) { h.appendChild(el('th', null, x)); });
    t.appendChild(h);
    T.metrics.forEach(function (name, k) {
      var va = val(A[F.scores][k]), vb = val(B[F.scores][k]);
      if (va === null && vb === null) { return; }
      var tr = el('tr');
      tr.dataset.metric = name;
      tr.appendChild(el('th', null, name));
      tr.appendChild(el('td', 'num', fmt(va)));
      tr.appendChild(el('td', 'num', fmt(vb)));
      var d = va !== null && vb !== null ? vb - va : null;
      var td = el('td', 'num diff' + (d === null ? '' : d > 0 ? ' up' : d < 0 ? ' down' : ''), d === null ? 'n/a' : (d > 0 ? '+' : '') + d.toFixed(4));
      if (d !== null) { td.dataset.diff = String(d); }
      tr.appendChild(td);
      t.appendChild(tr);
    });
    if (t.childNodes.length === 1) {
      c.appendChild(el('p', 'muted', 'no metric values in either run'));
    } else {
      c.appendChild(t);
    }
    return c;
  }

  function pages() { return Math.max(1, Math.ceil(pairs.length / PAGE)); }

  function render() {
    state.page = Math.min(Math.max(0, state.page), pages() - 1);
    var frag = document.createDocumentFragment();
    var start = state.page * PAGE;
    for (var k = start; k < Math.min(pairs.length, start + PAGE); k++) { frag.appendChild(card(pairs[k])); }
    byId('s-list').replaceChildren(frag);
    var extra = (state.onlyA || state.onlyB) ? ' (' + state.onlyA + ' only in A, ' + state.onlyB + ' only in B)' : '';
    byId('s-status').textContent = pairs.length
      ? 'scenarios ' + (start + 1) + '–' + Math.min(pairs.length, start + PAGE) + ' of ' + pairs.length + ' in both runs' + extra + ' · page ' + (state.page + 1) + ' of ' + pages()
      : 'no scenario in both runs' + extra;
    byId('s-prev').disabled = state.page === 0;
    byId('s-next').disabled = state.page >= pages() - 1;
    document.body.dataset.sidePairs = String(pairs.length);
    document.body.dataset.sidePage = String(state.page + 1);
  }

  function refresh() { state.page = 0; pair(); render(); }

  [['s-a', 'a'], ['s-b', 'b']].forEach(function (p) {
    byId(p[0]).addEventListener('change', function (e) { state[p[1]] = Number(e.target.value); refresh(); });
  });
  [['s-task', 'task'], ['s-metric', 'metric'], ['s-order', 'order']].forEach(function (p) {
    byId(p[0]).addEventListener('change', function (e) { state[p[1]] = e.target.value; refresh(); });
  });
  byId('s-prev').addEventListener('click', function () { state.page -= 1; render(); });
  byId('s-next').addEventListener('click', function () { state.page += 1; render(); });

  refresh();
  document.body.dataset.sideReady = '1';
})();
