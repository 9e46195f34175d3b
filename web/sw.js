// The web client's service worker: it shows the service's Web Push notifications ("your turn at
// table 12") while no page of the game is open, and a click on one brings the player to that table.
// Served as /play/sw.js, so its scope is /play/. No library and no fetch handler: the page itself
// always comes from the network.
//
// A push's payload, decrypted by the browser, is the JSON games/push/providers/webpush.py sends:
// {"title", "body", "tag": "table-<id>", "data": {"kind", "table", "message"}, "lang"}, its text
// already in the player's language (games/push/texts.py).

/** A push message's payload; a push that is not our JSON still gets a notification (the browser
 * requires one for every push: userVisibleOnly). */
function payloadOf(data) {
  if (!data) return {};
  try {
    return data.json();
  } catch {
    return { body: data.text() };
  }
}

/** Show one notification. Its tag (one per table) replaces that table's earlier notification, and
 * renotify sounds and vibrates again for the new one instead of replacing it silently. */
function showPush(payload) {
  const { title, body = "", tag, lang = "", data = {} } = payload || {};
  const options = { body, lang, data };
  if (tag) Object.assign(options, { tag, renotify: true }); // renotify without a tag is refused
  return self.registration.showNotification(title || "Hearts", options);
}

/** Bring the player to the table of a notification: a tab of the game already showing it, else
 * the tab of the game they used last (asked to open the table), else a new tab at /play/?table=<id>. */
async function openTable(data) {
  const table = /^\d+$/.test(String(data?.table ?? "")) ? String(data.table) : "";
  const scope = self.registration.scope;
  const tabs = (await self.clients.matchAll({ type: "window", includeUncontrolled: true })).filter((tab) =>
    tab.url.startsWith(scope),
  );
  const showing = table && tabs.find((tab) => new URL(tab.url).searchParams.get("table") === table);
  const tab = showing || tabs.find((tab) => tab.focused) || tabs[0];
  if (!tab) return self.clients.openWindow(table ? `${scope}?table=${table}` : scope);
  if (!showing && table) tab.postMessage({ type: "open-table", table: Number(table) }); // app.js listens
  return tab.focus();
}

// A new version of this script takes over at once: it keeps no state that an old one could need.
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("push", (event) => event.waitUntil(showPush(payloadOf(event.data))));
self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(openTable(event.notification.data));
});
