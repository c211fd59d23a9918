// Keyboard use of the review queue and proposal page. Every page works without this file.
//   queue:    j / k move between proposals, Enter opens the focused one, / jumps to the search box
//   proposal: a approve, r reject, c request changes, d defer, e edit, n / p next / previous proposal
(function () {
  "use strict";

  function typing(event) {
    var el = event.target;
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }

  function rowLinks() {
    return Array.prototype.slice.call(document.querySelectorAll("#queue-table tr[data-row] a.row-link"));
  }

  function moveInQueue(step) {
    var links = rowLinks();
    if (!links.length) return false;
    var at = links.indexOf(document.activeElement);
    var next = at < 0 ? (step > 0 ? 0 : links.length - 1) : Math.min(links.length - 1, Math.max(0, at + step));
    links[next].focus();
    links[next].closest("tr").scrollIntoView({ block: "nearest" });
    return true;
  }

  function press(key) {
    var target = document.querySelector('#proposal-body [data-key="' + key + '"]');
    if (!target) return false;
    if (target.tagName === "SUMMARY") {
      var details = target.parentElement;
      details.open = true;
      var field = details.querySelector("textarea, input:not([type=hidden])");
      (field || target).focus();
    } else if (target.tagName === "A") {
      target.click();
    } else {
      target.focus();
    }
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event)) return;
    var handled = false;
    if (event.key === "j") handled = moveInQueue(1);
    else if (event.key === "k") handled = moveInQueue(-1);
    else if (event.key === "/") {
      var search = document.getElementById("id_q");
      if (search) { search.focus(); handled = true; }
    } else if (/^[arcdenp]$/.test(event.key)) handled = press(event.key);
    if (handled) event.preventDefault();
  });
})();
