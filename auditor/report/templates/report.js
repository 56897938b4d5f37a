(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message));
    document.body.setAttribute("data-js-errors", errors.join(" | "));
  });
  var table = document.getElementById("sites");
  if (table) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.querySelectorAll("tr.site"));
    var search = document.getElementById("site-filter");
    var verdict = document.getElementById("verdict-filter");
    var shown = document.getElementById("sites-shown");
    var apply = function () {
      var q = search.value.trim().toLowerCase();
      var v = verdict.value;
      var n = 0;
      rows.forEach(function (row) {
        var ok = (!q || row.getAttribute("data-search").indexOf(q) >= 0) &&
                 (!v || row.getAttribute("data-verdict") === v);
        row.hidden = !ok;
        if (!ok) { row.nextElementSibling.hidden = true; }
        n += ok ? 1 : 0;
      });
      shown.textContent = String(n);
    };
    var sortBy = function (th, direction) {
      var col = th.cellIndex;
      var numeric = th.getAttribute("data-type") === "number";
      Array.prototype.forEach.call(th.parentNode.children, function (h) { h.classList.remove("asc", "desc"); });
      th.classList.add(direction > 0 ? "asc" : "desc");
      var key = function (row) {
        var cell = row.cells[col];
        var raw = cell.getAttribute("data-sort");
        if (raw === null) { raw = cell.textContent.trim(); }
        return numeric ? parseFloat(raw || "0") : raw.toLowerCase();
      };
      rows.sort(function (a, b) {
        var ka = key(a), kb = key(b);
        return (ka < kb ? -1 : ka > kb ? 1 : 0) * direction;
      });
      rows.forEach(function (row) {
        var detail = row.nextElementSibling;
        body.appendChild(row);
        body.appendChild(detail);
      });
    };
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.addEventListener("click", function () { sortBy(th, th.classList.contains("asc") ? -1 : 1); });
    });
    rows.forEach(function (row) {
      row.addEventListener("click", function () {
        var detail = row.nextElementSibling;
        detail.hidden = !detail.hidden;
      });
    });
    search.addEventListener("input", apply);
    verdict.addEventListener("change", apply);
    // Shareable views: report.html#q=_p2p_ops&verdict=contradiction&sort=line&open=1
    var params = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) { params[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1)); }
    });
    if (params.q) { search.value = params.q; }
    if (params.verdict) { verdict.value = params.verdict; }
    if (params.sort) {
      var th = table.tHead.querySelector('th[data-key="' + params.sort + '"]');
      if (th) { sortBy(th, params.dir === "desc" ? -1 : 1); }
    }
    apply();
    if (params.open) {
      rows.forEach(function (row) { if (!row.hidden) { row.nextElementSibling.hidden = false; } });
    }
  }
  var setupList = document.getElementById("setup-calls");
  if (setupList) {
    Array.prototype.forEach.call(document.querySelectorAll("#timeline g.setup"), function (g) {
      g.addEventListener("click", function () {
        setupList.open = true;
        setupList.scrollIntoView({block: "nearest"});
      });
    });
  }
  document.body.setAttribute("data-ready", "1");
})();
