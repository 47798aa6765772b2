/* The board's table: sort (a score column sorts best first on the first click), filter by name,
   condition and size, show or hide column groups, open an entry's details. Knows no column by
   name: each header says its key (data-key) and which end is best (data-better); each entry
   carries its sort values as data-<key> attributes (written by tide_bench/leaderboard/table.py). */
(function () {
  'use strict';
  var table = document.getElementById('board');
  if (!table) { return; }
  var heads = Array.prototype.slice.call(table.querySelectorAll('th[data-key]'));
  var bodies = function () { return Array.prototype.slice.call(table.querySelectorAll('tbody.entry')); };
  var status = document.getElementById('board-status');

  function compare(key, dir) {
    return function (a, b) {
      var x = a.getAttribute('data-' + key), y = b.getAttribute('data-' + key);
      if (x === '' || x === null) { return (y === '' || y === null) ? 0 : 1; }   // missing values last
      if (y === '' || y === null) { return -1; }
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny) && String(nx) !== 'NaN') ? nx - ny : x.localeCompare(y);
      if (c === 0 && key === 'rank') {   // one rank: the higher score first (the board's order)
        return parseFloat(a.getAttribute('data-order')) - parseFloat(b.getAttribute('data-order'));
      }
      return dir * c;
    };
  }

  function shadeRankGroups(active) {
    var last = null, shade = false;
    bodies().forEach(function (b) {
      if (active && !b.hidden) {
        var r = b.getAttribute('data-rank');
        if (r !== last) { shade = !shade; last = r; }
        b.classList.toggle('group-shade', shade && r !== '');
      } else {
        b.classList.remove('group-shade');
      }
    });
  }

  function sortBy(th) {
    var key = th.getAttribute('data-key');
    var current = th.getAttribute('aria-sort');
    var bestFirst = th.getAttribute('data-better') === 'high' ? 'descending' : 'ascending';
    var next = current ? (current === 'ascending' ? 'descending' : 'ascending') : bestFirst;
    heads.forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', next);
    var sorted = bodies().sort(compare(key, next === 'ascending' ? 1 : -1));
    sorted.forEach(function (b) { table.appendChild(b); });
    shadeRankGroups(key === 'rank');
  }

  bodies().forEach(function (b, i) { b.setAttribute('data-order', String(i)); });
  heads.forEach(function (th) {
    var button = th.querySelector('button.sort') || th;
    button.addEventListener('click', function () { sortBy(th); });
  });

  // ---- filters
  var search = document.getElementById('f-search');
  var condition = document.getElementById('f-condition');
  var sizeMin = document.getElementById('f-size-min');
  var sizeMax = document.getElementById('f-size-max');
  function filter() {
    var words = (search.value || '').toLowerCase().split(/\s+/).filter(Boolean);
    var cond = condition.value, lo = parseFloat(sizeMin.value), hi = parseFloat(sizeMax.value);
    var shown = 0, all = bodies();
    all.forEach(function (b) {
      var name = (b.getAttribute('data-model') || '').toLowerCase() + ' ' + (b.getAttribute('data-id') || '');
      var size = parseFloat(b.getAttribute('data-size'));
      var ok = words.every(function (w) { return name.indexOf(w) >= 0; }) &&
        (!cond || b.getAttribute('data-condition') === cond) &&
        (isNaN(lo) || (!isNaN(size) && size >= lo)) &&
        (isNaN(hi) || (!isNaN(size) && size <= hi));
      if (b.getAttribute('data-anchor') === '1') { ok = true; }   // a reference anchor is a line to read against
      b.hidden = !ok;
      if (ok) { shown++; }
    });
    status.textContent = 'Showing ' + shown + ' of ' + all.length + ' entries';
    var rankHead = table.querySelector('th[data-key=rank]');
    shadeRankGroups(rankHead && rankHead.hasAttribute('aria-sort'));
  }
  [search, condition, sizeMin, sizeMax].forEach(function (el) {
    el.addEventListener('input', filter);
    el.addEventListener('change', filter);
  });

  // ---- column groups (e.g. the rubric's factors)
  Array.prototype.forEach.call(document.querySelectorAll('button[data-toggle-group]'), function (btn) {
    var group = btn.getAttribute('data-toggle-group');
    var label = btn.textContent;
    btn.addEventListener('click', function () {
      var show = btn.getAttribute('aria-pressed') !== 'true';
      btn.setAttribute('aria-pressed', show ? 'true' : 'false');
      btn.textContent = show ? label.replace(/^Show/, 'Hide') : label;
      Array.prototype.forEach.call(table.querySelectorAll('[data-group="' + group + '"]'), function (cell) {
        cell.classList.toggle('off', !show);
      });
    });
  });

  // ---- details rows
  Array.prototype.forEach.call(table.querySelectorAll('button.more'), function (btn) {
    btn.addEventListener('click', function () {
      var row = document.getElementById(btn.getAttribute('aria-controls'));
      var open = row.hasAttribute('hidden');
      if (open) { row.removeAttribute('hidden'); } else { row.setAttribute('hidden', ''); }
      btn.setAttribute('aria-expanded', open ? 'true' : 'false');
      btn.textContent = open ? 'hide' : 'details';
    });
  });
  filter();
  shadeRankGroups(true);
})();
