// Small progressive enhancements for the curation UI. Every page works without this file.
(function () {
  "use strict";

  function flash(text, kind) {
    var box = document.getElementById("messages");
    if (!box) return;
    var p = document.createElement("p");
    p.className = "flash flash-" + (kind || "error");
    p.textContent = text;
    box.appendChild(p);
  }

  // Expand / collapse every node of the taxonomy tree.
  document.addEventListener("click", function (event) {
    var toggle = event.target.closest("[data-tree]");
    if (toggle) {
      var open = toggle.getAttribute("data-tree") === "expand";
      document.querySelectorAll("#tree-region details").forEach(function (d) { d.open = open; });
      return;
    }
    var dismiss = event.target.closest("[data-dismiss='inline-slot']");
    if (dismiss) {
      closeSlot(dismiss.closest(".inline-slot"));
    }
  });

  function closeSlot(slot) {
    if (!slot) return;
    var node = slot.closest(".node, .cluster");
    slot.innerHTML = "";
    var opener = node && node.querySelector(".add-child, .add-root");
    if (opener) opener.focus();
  }

  // A filter select or checkbox marked data-autosubmit applies itself (the page's CSP allows no inline
  // handlers; without this file the form's own button still submits it).
  document.addEventListener("change", function (event) {
    var field = event.target.closest && event.target.closest("[data-autosubmit]");
    if (field && field.form) field.form.submit();
  });

  // Escape closes an inline "new label" form.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var slot = event.target.closest && event.target.closest(".inline-slot");
    if (slot) closeSlot(slot);
  });

  // An inline form opened inside a collapsed node: open the node so the form is visible.
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail.target;
    if (target && target.classList && target.classList.contains("inline-slot")) {
      var details = target.closest("details");
      while (details) { details.open = true; details = details.parentElement.closest("details"); }
    }
    var highlighted = document.querySelector(".is-highlight");
    if (highlighted && target && target.id === "tree-region") {
      highlighted.scrollIntoView({ block: "center" });
    }
  });

  // Refusals other than form errors (403, 404, 5xx) are reported, never silently dropped.
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var reason = xhr.status === 403 ? "Your role does not allow this change."
      : xhr.status === 404 ? "Not found: it may have been changed by someone else. Reload the page."
      : "The server could not complete the request (" + xhr.status + ").";
    flash(reason, "error");
  });
  document.addEventListener("htmx:sendError", function () {
    flash("The server cannot be reached. Check your connection and try again.", "error");
  });
})();
