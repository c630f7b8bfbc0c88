// Refreshes every element with a data-refresh-url (the job status
// component) every few seconds, in place. Pages work without it: their
// Refresh link reloads the whole page.
(function () {
  "use strict";
  if (!window.fetch) { return; }
  function refresh(id) {
    var el = document.getElementById(id);
    var url = el && el.getAttribute("data-refresh-url");
    if (!url) { return; }
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var tpl = document.createElement("template");
        tpl.innerHTML = html.trim();
        var fresh = tpl.content.firstElementChild;
        var current = document.getElementById(id);
        if (fresh && current) { current.replaceWith(fresh); }
      })
      .catch(function () { /* keep the last status; try again next time */ })
      .finally(function () { setTimeout(function () { refresh(id); }, 3000); });
  }
  var els = document.querySelectorAll("[data-refresh-url][id]");
  for (var i = 0; i < els.length; i++) {
    (function (id) { setTimeout(function () { refresh(id); }, 3000); })(els[i].id);
  }
})();
