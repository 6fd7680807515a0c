// Keyboard shortcuts of the rating page (the only script the viewer serves).
(function () {
  'use strict';
  var form = document.getElementById('rating');
  if (!form) { return; }
  var pairwise = form.dataset.kind === 'pairwise';
  var scores = Array.prototype.slice.call(form.querySelectorAll('input.score'));
  if (scores.length) { (scores.find(function (s) { return !s.value; }) || scores[0]).focus(); }
  document.addEventListener('keydown', function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    if (pairwise) {
      var choice = { a: 'A', b: 'B', t: 'tie' }[e.key];
      if (!choice) { return; }
      form.querySelector('input[name="winner"][value="' + choice + '"]').checked = true;
      e.preventDefault();
      form.submit();
      return;
    }
    var i = scores.indexOf(document.activeElement);
    if (i < 0 || !/^[0-9]$/.test(e.key)) { return; }
    e.preventDefault();
    scores[i].value = e.key === '0' ? '10' : e.key;
    if (i + 1 < scores.length) { scores[i + 1].focus(); } else { document.getElementById('save').focus(); }
  });
}());
