// The one live-refresh script, loaded on every page. Every element with an
// id and a data-refresh-url is fetched again from that URL every few
// seconds (data-refresh-seconds, default 3) and replaced in place by the
// answer's first element; the job status and the queue, GPU and cost
// status are such fragments. Pages work without it: their Refresh link
// reloads the whole page.
(function () {
  "use strict";
  if (!window.fetch || !document.querySelectorAll) { return; }
  function every(el) {
    var s = parseInt(el.getAttribute("data-refresh-seconds") || "3", 10);
    return (s > 0 ? s : 3) * 1000;
  }
  function schedule(id, ms) { setTimeout(function () { refresh(id); }, ms); }
  function refresh(id) {
    var el = document.getElementById(id);
    var url = el && el.getAttribute("data-refresh-url");
    if (!url) { return; } // gone, or the server stopped asking for refreshes
    var ms = every(el);
    if (document.hidden) { schedule(id, ms); return; }
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
      .finally(function () { schedule(id, ms); });
  }
  var els = document.querySelectorAll("[data-refresh-url][id]");
  for (var i = 0; i < els.length; i++) { schedule(els[i].id, every(els[i])); }
})();
