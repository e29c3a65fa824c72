// Optional helpers: every page works without them. Times are rewritten into the viewer's
// time zone, and a "Copy" button copies a credential shown once.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const format = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  for (const element of document.querySelectorAll("time[datetime]")) {
    const moment = new Date(element.getAttribute("datetime"));
    if (!Number.isNaN(moment.getTime())) {
      element.title = element.textContent;
      element.textContent = format.format(moment);
    }
  }
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.hidden = false;
    button.addEventListener("click", async () => {
      const field = document.getElementById(button.dataset.copy);
      try {
        await navigator.clipboard.writeText(field.value);
        button.textContent = "Copied";
      } catch (error) {
        field.select();
      }
    });
  }
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const footer = document.querySelector("footer");
  if (footer && zone) footer.textContent = "Times are shown in your time zone (" + zone + ").";
});
