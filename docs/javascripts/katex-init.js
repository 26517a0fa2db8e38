// Render the math that pymdownx.arithmatex (generic mode) leaves as \( ... \) and \[ ... \] inside
// <span class="arithmatex"> / <div class="arithmatex">. KaTeX is vendored under docs/assets/katex (from the npm
// package `katex`), so pages render the same when built offline and when served.
(function () {
  function renderMath(root) {
    if (typeof katex === "undefined") {
      return;
    }
    root.querySelectorAll(".arithmatex").forEach(function (element) {
      var source = element.textContent.trim();
      var display = source.startsWith("\\[");
      var body = source.replace(/^\\[\(\[]/, "").replace(/\\[\)\]]$/, "");
      katex.render(body, element, { displayMode: display, throwOnError: false });
    });
  }
  // mkdocs-material's instant navigation swaps page bodies without a reload: it announces each page on document$.
  if (typeof document$ !== "undefined") {
    document$.subscribe(function () {
      renderMath(document.body);
    });
  } else {
    document.addEventListener("DOMContentLoaded", function () {
      renderMath(document.body);
    });
  }
})();
