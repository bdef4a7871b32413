// The triage queue's keys (SPEC §15), a progressive enhancement: every action is also a
// link or a button that works without this file.
//   j / k  next / previous row        a  approve the current row (then the next is current)
//   r      reject the current row     e  its own page (edit, approve in part)
//   o      open its full card here    x  select / unselect it      ?  this help
// The current row is focused and announced (a polite live region); the row to return to
// after a decision is in the address (#row-<id>), so approving moves on to the next one.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var queue = document.getElementById("queue");
    if (!queue) return;
    var rows = Array.prototype.slice.call(queue.querySelectorAll("tr.queue-row"));
    var hint = document.getElementById("keys-hint");
    var help = document.getElementById("keys-help");
    var announce = document.getElementById("queue-announce");
    var current = -1;
    if (hint) hint.hidden = false;

    function say(text) {
      if (announce) announce.textContent = text;
    }

    function choose(index, quiet) {
      if (!rows.length) return;
      index = Math.max(0, Math.min(rows.length - 1, index));
      rows.forEach(function (row) { row.classList.remove("current"); });
      current = index;
      var row = rows[index];
      row.classList.add("current");
      row.focus({ preventScroll: true });
      row.scrollIntoView({ block: "nearest" });
      if (!quiet) say(row.getAttribute("data-label-text") + " (" + (index + 1) + "/" + rows.length + ")");
    }

    function toggleHelp(show) {
      if (!help) return;
      help.hidden = show === undefined ? !help.hidden : !show;
      if (!help.hidden) help.focus();
    }

    var wanted = /^#row-(\d+)$/.exec(window.location.hash);
    if (wanted) {
      rows.forEach(function (row, index) {
        if (row.getAttribute("data-id") === wanted[1]) choose(index);
      });
    }
    rows.forEach(function (row, index) {
      row.addEventListener("focusin", function () {
        if (current !== index) {
          rows.forEach(function (other) { other.classList.remove("current"); });
          current = index;
          row.classList.add("current");
        }
      });
    });

    var selectPage = document.getElementById("select-page");
    if (selectPage) {
      selectPage.addEventListener("click", function (event) {
        event.preventDefault();
        var boxes = queue.querySelectorAll("input[name=ids]");
        var all = Array.prototype.every.call(boxes, function (box) { return box.checked; });
        Array.prototype.forEach.call(boxes, function (box) { box.checked = !all; });
        say((all ? "0" : String(boxes.length)) + " / " + boxes.length);
      });
    }
    var close = document.getElementById("keys-help-close");
    if (close) close.addEventListener("click", function () { toggleHelp(false); });

    document.addEventListener("keydown", function (event) {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      var target = event.target;
      var typing = target && (target.isContentEditable ||
        /^(TEXTAREA|SELECT)$/.test(target.tagName) ||
        (target.tagName === "INPUT" && target.type !== "checkbox"));
      if (typing) return;
      var key = event.key;
      if (key === "?") { toggleHelp(); event.preventDefault(); return; }
      if (key === "Escape" && help && !help.hidden) { toggleHelp(false); return; }
      if (key === "j") { choose(current + 1); event.preventDefault(); return; }
      if (key === "k") { choose(current < 0 ? 0 : current - 1); event.preventDefault(); return; }
      if ("areox".indexOf(key) === -1 || key === "") return;
      if (current < 0) { choose(0, true); }
      var row = rows[current];
      if (!row) return;
      event.preventDefault();
      if (key === "a" || key === "r") {
        var button = row.querySelector('button[data-key="' + key + '"]');
        if (button) button.click();
      } else if (key === "e") {
        window.location.href = row.getAttribute("data-edit");
      } else if (key === "o") {
        window.location.href = row.getAttribute("data-open");
      } else if (key === "x") {
        var box = row.querySelector("input[name=ids]");
        if (box) box.checked = !box.checked;
      }
    });
  });
})();
