// The page's words: one catalog per language in i18n/<lang>.json, with the same keys in every
// one (tests/e2e/test_web_i18n.py checks them, and that every key the page uses is in each).
// t("key", {name}) fills {name} in; tp("key", n) picks key.one or key.other by the language's
// plural rules.

export const LANGUAGES = ["en", "mi", "eu", "ms", "ky"];
const STORED = "hearts.lang";

let lang = "en";
let words = {};
let english = {};
let plural = new Intl.PluralRules("en");

async function load(code) {
  const response = await fetch(`i18n/${code}.json`, { headers: { Accept: "application/json" } });
  if (!response.ok) throw new Error(`no catalog for ${code}`);
  return response.json();
}

/** The language chosen before on this browser, else the first of the browser's languages the
 * page has, else English. */
export function preferredLanguage() {
  const saved = localStorage.getItem(STORED);
  if (LANGUAGES.includes(saved)) return saved;
  for (const tag of navigator.languages || [navigator.language || "en"]) {
    const base = String(tag).toLowerCase().split("-")[0];
    if (LANGUAGES.includes(base)) return base;
  }
  return "en";
}

export async function setLanguage(code) {
  if (!LANGUAGES.includes(code)) code = "en";
  if (!Object.keys(english).length) english = await load("en");
  words = code === "en" ? english : await load(code);
  lang = code;
  plural = new Intl.PluralRules(code === "mi" ? "en" : code); // no CLDR plural data for Māori
  localStorage.setItem(STORED, code);
  document.documentElement.lang = code;
  translateStatic(document);
}

export const language = () => lang;

export function t(key, params = {}) {
  const text = words[key] ?? english[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (match, name) => (name in params ? String(params[name]) : match));
}

export function tp(key, count, params = {}) {
  const form = plural.select(count);
  const chosen = `${key}.${form}` in words ? `${key}.${form}` : `${key}.other`;
  return t(chosen, { n: count, ...params });
}

/** Elements with data-i18n="key" get the key's text (data-i18n-label="key": their aria-label). */
export function translateStatic(root) {
  for (const node of root.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const node of root.querySelectorAll("[data-i18n-label]")) node.setAttribute("aria-label", t(node.dataset.i18nLabel));
}
