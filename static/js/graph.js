// Neighbourhood picture of a node page: highlight a node's edges and neighbours on hover or focus.
// The picture is laid out on the server (ontology/views/picture.py); without this file it is simply static.
(function () {
  "use strict";

  function clear(svg) {
    svg.classList.remove("is-focused");
    svg.querySelectorAll(".is-hl").forEach(function (el) { el.classList.remove("is-hl"); });
    svg.querySelectorAll(".gedge-line[data-marker]").forEach(function (line) {
      line.setAttribute("marker-end", line.getAttribute("data-marker"));
      line.removeAttribute("data-marker");
    });
  }

  function highlight(node) {
    var svg = node.closest("svg.graph-svg");
    if (!svg) return;
    clear(svg);
    var id = node.getAttribute("data-node");
    var layer = svg.querySelector(".gedges");
    svg.classList.add("is-focused");
    node.classList.add("is-hl");
    svg.querySelectorAll(".gedge").forEach(function (edge) {
      var source = edge.getAttribute("data-source"), target = edge.getAttribute("data-target");
      if (source !== id && target !== id) return;
      edge.classList.add("is-hl");
      layer.appendChild(edge); // drawn last: on top of the others
      var line = edge.querySelector(".gedge-line");
      line.setAttribute("data-marker", line.getAttribute("marker-end"));
      line.setAttribute("marker-end", "url(#arrow-hl)");
      var other = svg.querySelector('.gnode[data-node="' + CSS.escape(source === id ? target : source) + '"]');
      if (other) other.classList.add("is-hl");
    });
  }

  function nodeOf(event) {
    return event.target.closest && event.target.closest("svg.graph-svg .gnode");
  }

  document.addEventListener("mouseover", function (event) {
    var node = nodeOf(event);
    if (node) highlight(node);
  });
  document.addEventListener("mouseout", function (event) {
    var node = nodeOf(event);
    if (node && !(event.relatedTarget && node.contains(event.relatedTarget))) clear(node.closest("svg"));
  });
  document.addEventListener("focusin", function (event) {
    var node = nodeOf(event);
    if (node) highlight(node);
  });
  document.addEventListener("focusout", function (event) {
    var node = nodeOf(event);
    if (node) clear(node.closest("svg"));
  });
})();
