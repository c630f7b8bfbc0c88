// Refreshes a job page's status fragment every few seconds. The page works
// without it: the "Refresh" link reloads the whole page.
(function () {
  "use strict";
  var el = document.getElementById("job-status");
  if (!el || !window.fetch) { return; }
  var url = el.getAttribute("data-status-url");
  if (!url) { return; }
  function refresh() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var tpl = document.createElement("template");
        tpl.innerHTML = html.trim();
        var fresh = tpl.content.firstElementChild;
        var current = document.getElementById("job-status");
        if (fresh && current) { current.replaceWith(fresh); }
      })
      .catch(function () { /* keep the last status; try again next time */ })
      .finally(function () { setTimeout(refresh, 3000); });
  }
  setTimeout(refresh, 3000);
})();
