// Keyboard shortcut for the pages (they work without it): "/" focuses the search box.
document.addEventListener("keydown", function (event) {
  var target = event.target;
  var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT");
  if (event.key === "/" && !typing) {
    var search = document.getElementById("search");
    if (search) {
      event.preventDefault();
      search.focus();
    }
  }
});

// Copy buttons beside shortened ids: copy the whole id (the tooltip shows it too).
document.addEventListener("click", function (event) {
  var button = event.target && event.target.closest ? event.target.closest("button.copy") : null;
  if (!button || !navigator.clipboard) {
    return;
  }
  navigator.clipboard.writeText(button.getAttribute("data-copy") || "").then(function () {
    button.classList.add("done");
    button.textContent = "✓";
  }, function () {});
});
