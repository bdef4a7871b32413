// Small progressive enhancements; every page works without them.
// - Live character counts for textareas with data-cap (the server already shows a count).
// - A confirmation before forms marked data-confirm (forget, delete).
(function () {
  "use strict";
  function updateCounter(textarea) {
    var counter = document.querySelector('[data-counter-for="' + textarea.id + '"]');
    if (!counter) return;
    var cap = parseInt(textarea.getAttribute("data-cap"), 10);
    var count = Array.from(textarea.value.replace(/\r\n/g, "\n")).length;
    counter.querySelector(".count").textContent = String(count);
    var over = count > cap;
    counter.classList.toggle("over", over);
    var warning = counter.querySelector(".warning");
    if (warning) warning.hidden = !over;
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("textarea[data-cap]").forEach(function (textarea) {
      textarea.addEventListener("input", function () { updateCounter(textarea); });
      updateCounter(textarea);
    });
    document.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
      });
    });
  });
})();
