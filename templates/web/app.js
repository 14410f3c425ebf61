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
