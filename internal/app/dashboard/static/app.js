// Progressive improvements only: every page works without this file.
document.addEventListener("click", function (ev) {
  var b = ev.target.closest("button.copy");
  if (!b) return;
  var input = document.getElementById(b.dataset.copy);
  if (!input) return;
  input.select();
  var done = function () { b.textContent = "Copied"; setTimeout(function () { b.textContent = "Copy"; }, 2000); };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(input.value).then(done, function () { document.execCommand("copy"); done(); });
  } else {
    document.execCommand("copy");
    done();
  }
});

// The form adding a source: the URL's placeholder is the chosen transport's
// default address (the vendors' usage APIs), else an example.
(function () {
  var sel = document.getElementById("stransport"), url = document.getElementById("surl");
  if (!sel || !url) return;
  var show = function () {
    var opt = sel.options[sel.selectedIndex];
    url.placeholder = (opt && opt.dataset.url) || url.dataset.placeholder || "";
  };
  sel.addEventListener("change", show);
  show();
})();
