/* The instance browser: every item's conversation, a model's reply, the reference and the judge's
   scores with rationales; filter by text, scenario, turn, score and flag; compare two models on the
   same item. Data comes from files beside the page (instances/items.js, instances/<id>.js, each a
   tideBench.receive(kind, data) call, loaded by a <script> tag only when needed: a page opened
   from disk cannot fetch() JSON) or from a JSON block inside the page (the single-run view).
   Every string is inserted with textContent: nothing from the data is ever parsed as HTML.
   Each opened item has a link to itself (#item=<id>&model=<id>&compare=<id>): opening it shows
   that item alone, open, until a filter changes; a value in the link is only ever compared with
   the data or with the existing options, never inserted as markup. */
(function () {
  'use strict';
  var root = document.getElementById('ib');
  if (!root) { return; }
  var T = window.tideBench = window.tideBench || {};
  var store = { items: null, models: {} };
  var waiting = {}, requested = {};
  var PAGE = 25;
  var base = root.getAttribute('data-base') || '';

  T.receive = function (kind, data) {
    var key = kind === 'items' ? 'items' : 'model:' + data.id;
    if (kind === 'items') { store.items = data; } else { store.models[data.id] = data; }
    (waiting[key] || []).forEach(function (cb) { cb(); });
    delete waiting[key];
  };
  var inline = document.getElementById('tide-instances');
  if (inline) {
    var data = JSON.parse(inline.textContent);
    store.items = data.items;
    Object.keys(data.models).forEach(function (k) { store.models[k] = data.models[k]; });
  }

  function have(key) { return key === 'items' ? !!store.items : !!store.models[key.slice(6)]; }
  function need(key, file, cb) {
    if (have(key)) { cb(); return; }
    (waiting[key] = waiting[key] || []).push(cb);
    if (requested[key]) { return; }
    requested[key] = true;
    var s = document.createElement('script');
    s.src = base + file;
    s.onerror = function () { say('Could not load ' + base + file + ' (is it beside this page?)'); };
    document.head.appendChild(s);
  }
  function ready(ids, cb) {
    var keys = ['items'].concat(ids.map(function (i) { return 'model:' + i; }));
    var left = keys.length;
    keys.forEach(function (k) {
      need(k, k === 'items' ? 'items.js' : k.slice(6) + '.js', function () { if (--left === 0) { cb(); } });
    });
  }

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function say(text) { $('ib-status').textContent = text; }
  var model = $('ib-model'), other = $('ib-compare');
  var search = $('ib-search'), scenario = $('ib-scenario'), turn = $('ib-turn');
  var scoreSel = $('ib-score'), flag = $('ib-flag'), order = $('ib-sort');
  var list = $('ib-list'), more = $('ib-more');
  var shown = 0, matches = [];
  var focus = null;   // the item a link names: shown alone until a filter changes

  function fillOnce(select, values, label) {
    if (select.getAttribute('data-filled')) { return; }
    select.setAttribute('data-filled', '1');
    values.forEach(function (v) { var o = el('option', null, label ? label(v) : v); o.value = String(v); select.appendChild(o); });
  }
  function setup() {
    var items = store.items, scen = {}, turns = {};
    Object.keys(items).forEach(function (id) { scen[items[id].scenario || ''] = 1; turns[items[id].turn] = 1; });
    fillOnce(scenario, Object.keys(scen).filter(Boolean).sort());
    fillOnce(turn, Object.keys(turns).map(Number).sort(function (a, b) { return a - b; }));
    var m = store.models[model.value], lo = m.scale[0], hi = m.scale[1], bands = [];
    for (var v = lo; v < hi; v++) { bands.push(v); }
    fillOnce(scoreSel, bands, function (v) { return v + (v + 1 === hi ? '\u2013' + (v + 1) : ' to <' + (v + 1)); });
  }

  function byId(m) {
    var map = {};
    if (m) { m.records.forEach(function (r) { map[r.id] = r; }); }
    return map;
  }
  function haystack(item, recs, m) {
    var parts = [item.client, item.reference, item.scenario, String(item.turn)];
    item.history.forEach(function (h) { parts.push(h[1]); });
    recs.forEach(function (r) { if (r) { parts.push(r.reply, r.id, r.unscored_reason || '', r.flag_reason || ''); (r.rationales || []).forEach(function (x) { parts.push(x); }); } });
    return parts.join('\n').toLowerCase();
  }
  function isFailure(m, r) { return r.status === 'unscored' && m.failure_kinds.indexOf(r.unscored_kind) >= 0; }

  function apply() {
    var a = store.models[model.value];
    var b = other.value && other.value !== model.value ? store.models[other.value] : null;
    if (!a || !store.items) { return; }
    setup();
    var bMap = byId(b);
    var words = (search.value || '').toLowerCase().split(/\s+/).filter(Boolean);
    var band = scoreSel.value === '' ? null : parseFloat(scoreSel.value), hi = a.scale[1];
    matches = a.records.filter(focus !== null ? function (r) { return r.id === focus && !!store.items[r.id]; } : function (r) {
      var item = store.items[r.id];
      if (!item) { return false; }
      if (scenario.value && item.scenario !== scenario.value) { return false; }
      if (turn.value && String(item.turn) !== turn.value) { return false; }
      if (band !== null) {
        if (typeof r.overall !== 'number') { return false; }
        var top = band + 1 === hi ? hi + 1e-9 : band + 1;
        if (r.overall < band || r.overall >= top) { return false; }
      }
      var f = flag.value;
      if (f === 'flagged' && !r.flagged) { return false; }
      if (f === 'unscored' && r.status !== 'unscored') { return false; }
      if (f === 'failure' && !isFailure(a, r)) { return false; }
      if (f === 'clean' && (r.status !== 'scored' || r.flagged)) { return false; }
      if (words.length) {
        var text = haystack(item, [r, bMap[r.id]], a);
        if (!words.every(function (w) { return text.indexOf(w) >= 0; })) { return false; }
      }
      return true;
    });
    var score = function (r) { return typeof r.overall === 'number' ? r.overall : -Infinity; };
    if (order.value === 'low') { matches.sort(function (x, y) { return score(x) - score(y) || (x.id < y.id ? -1 : 1); }); }
    if (order.value === 'high') { matches.sort(function (x, y) { return score(y) - score(x) || (x.id < y.id ? -1 : 1); }); }
    if (order.value === 'diff' && b) {
      var gap = function (r) { var o = bMap[r.id]; return o && typeof o.overall === 'number' && typeof r.overall === 'number' ? Math.abs(r.overall - o.overall) : -1; };
      matches.sort(function (x, y) { return gap(y) - gap(x) || (x.id < y.id ? -1 : 1); });
    }
    list.textContent = '';
    shown = 0;
    render(a, b, bMap);
    if (focus !== null) { showLinked(a); }
  }

  function showLinked(a) {
    var d = list.querySelector('details.ib-item');
    if (!d) {
      say('The linked item ' + focus + ' is not among the replies of ' + a.name + '; change any filter to see all items.');
      return;
    }
    d.open = true;
    say('The linked item, alone; change any filter to see all ' + a.records.length + ' items.');
    d.scrollIntoView({ block: 'start' });
  }

  function linkTo(id, a, b) {
    return '#item=' + encodeURIComponent(id) + '&model=' + encodeURIComponent(a.id) +
      (b ? '&compare=' + encodeURIComponent(b.id) : '');
  }
  function hashParams() {
    var params = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (pair) {
      var at = pair.indexOf('=');
      if (at <= 0) { return; }
      try { params[pair.slice(0, at)] = decodeURIComponent(pair.slice(at + 1)); } catch (e) { /* malformed: ignored */ }
    });
    return params;
  }
  function hasOption(select, value) {
    return Array.prototype.some.call(select.options, function (o) { return o.value === value; });
  }
  function followLink() {
    var p = hashParams();
    if (typeof p.item !== 'string' || p.item === '') { return false; }
    if (p.model && hasOption(model, p.model)) { model.value = p.model; }
    other.value = p.compare && hasOption(other, p.compare) ? p.compare : '';
    focus = p.item;
    start();
    return true;
  }

  function badge(r, m) {
    if (!r) { return el('span', 'badge unscored', 'no reply'); }
    if (r.status === 'scored') {
      var s = el('span', 'badge' + (r.flagged ? ' flag' : ''), r.overall.toFixed(2) + (r.flagged ? ' \u26A0 flag' : ''));
      s.title = m.name + ': overall ' + r.overall.toFixed(2) + (r.flagged ? ' (safety flag)' : '');
      return s;
    }
    return el('span', 'badge unscored', r.status === 'unscored' ? 'unscored: ' + r.unscored_kind : 'not judged');
  }

  function render(a, b, bMap) {
    var stop = Math.min(matches.length, shown + PAGE);
    for (var i = shown; i < stop; i++) { list.appendChild(summaryOf(matches[i], a, b, bMap[matches[i].id])); }
    shown = stop;
    more.hidden = shown >= matches.length;
    say(matches.length + ' of ' + a.records.length + ' items match' + (matches.length ? '; showing ' + shown : '') +
      (b ? ' (comparing ' + a.name + ' with ' + b.name + ')' : ''));
  }

  function summaryOf(r, a, b, rb) {
    var item = store.items[r.id];
    var d = el('details', 'ib-item');
    d.setAttribute('data-item', r.id);
    var s = el('summary');
    s.appendChild(el('span', 'ib-id', r.id));
    s.appendChild(el('span', 'tag', (item.scenario || 'no scenario') + ' \u00b7 turn ' + item.turn));
    s.appendChild(badge(r, a));
    if (b) { s.appendChild(badge(rb, b)); }
    s.appendChild(el('span', 'ib-snippet', item.client.length > 140 ? item.client.slice(0, 139) + '\u2026' : item.client));
    d.appendChild(s);
    d.addEventListener('toggle', function () {
      if (d.open && !d.getAttribute('data-built')) { d.setAttribute('data-built', '1'); d.appendChild(body(item, r, a, b, rb)); }
    });
    return d;
  }

  function turnOf(who, text) {
    var p = el('div', 'turn');
    p.appendChild(el('span', 'who', who + ': '));
    p.appendChild(document.createTextNode(text));
    return p;
  }

  function replyBox(m, r, cls) {
    var box = el('div', 'reply' + (cls ? ' ' + cls : ''));
    box.appendChild(el('h4', null, m.name));
    if (!r) { box.appendChild(el('p', 'muted', 'This model has no reply to this item.')); return box; }
    box.appendChild(el('div', 'turn', r.reply === '' ? '(empty reply)' : r.reply));
    var facts = [];
    if (typeof r.length === 'number') { facts.push(r.length + ' tokens'); }
    if (typeof r.cosine === 'number') { facts.push('cosine ' + r.cosine.toFixed(3)); }
    if (facts.length) { box.appendChild(el('p', 'muted', facts.join(' \u00b7 '))); }
    if (r.status === 'scored') {
      var t = el('table', 'scores'), tb = el('tbody');
      m.factors.forEach(function (f, i) {
        var tr = el('tr');
        tr.appendChild(el('td', null, f[1]));
        tr.appendChild(el('td', 's', r.scores[i] + '/' + m.scale[1]));
        tr.appendChild(el('td', null, r.rationales[i]));
        tb.appendChild(tr);
      });
      var total = el('tr');
      total.appendChild(el('td', null, 'Overall'));
      total.appendChild(el('td', 's', r.overall.toFixed(2)));
      total.appendChild(el('td'));
      tb.appendChild(total);
      t.appendChild(tb);
      box.appendChild(t);
      box.appendChild(el('p', r.flagged ? 'warn' : 'muted', r.flagged ? '\u26A0 Safety flag' + (r.flag_category ? ' (' + r.flag_category + ')' : '') + ': ' + r.flag_reason : 'No safety flag.'));
    } else if (r.status === 'unscored') {
      box.appendChild(el('p', 'warn', 'Unscored (' + r.unscored_kind + (isFailure(m, r) ? ', a model failure: counted at the lowest score' : ', not counted') + '): ' + r.unscored_reason));
    } else {
      box.appendChild(el('p', 'muted', 'Not judged.'));
    }
    return box;
  }

  function body(item, r, a, b, rb) {
    var wrap = el('div', 'ib-body');
    wrap.appendChild(el('p', 'muted', 'Persona ' + item.persona + ' \u00b7 scenario ' + (item.scenario || 'n/a') + ' \u00b7 turn ' + item.turn));
    item.history.forEach(function (h) { wrap.appendChild(turnOf(h[0] === 'user' ? 'Client' : 'Supporter (reference)', h[1])); });
    wrap.appendChild(turnOf('Client', item.client));
    var grid = el('div', 'replies');
    grid.appendChild(replyBox(a, r, ''));
    if (b) { grid.appendChild(replyBox(b, rb, 'b')); }
    wrap.appendChild(grid);
    var ref = el('div', 'reference');
    ref.appendChild(el('span', 'who', 'Reference reply: '));
    ref.appendChild(document.createTextNode(item.reference));
    wrap.appendChild(ref);
    var link = el('a', 'ib-link', 'Link to this item');
    link.href = linkTo(r.id, a, b);
    wrap.appendChild(link);
    return wrap;
  }

  function start() {
    var ids = [model.value];
    if (other.value && other.value !== model.value) { ids.push(other.value); }
    if (!model.value) { return; }
    say('Loading\u2026');
    ready(ids, apply);
  }
  var chosen = root.getAttribute('data-default');
  if (chosen) { model.value = chosen; }
  [model, other].forEach(function (s) { s.addEventListener('change', start); });
  [search, scenario, turn, scoreSel, flag, order].forEach(function (s) {
    s.addEventListener(s === search ? 'input' : 'change', function () {
      focus = null;
      if (store.models[model.value] && store.items) { apply(); } else { start(); }
    });
  });
  window.addEventListener('hashchange', followLink);
  more.addEventListener('click', function () {
    var a = store.models[model.value], b = other.value && other.value !== model.value ? store.models[other.value] : null;
    render(a, b, byId(b));
  });
  if (!followLink() && (chosen || root.getAttribute('data-inline') === '1')) { start(); }
})();
