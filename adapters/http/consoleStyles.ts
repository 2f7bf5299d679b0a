/**
 * The console's one stylesheet, served at `/ui/assets/console.css`. Kept as a module so `tsc`
 * (the only build step) ships it in dist/ with the server. Colours meet WCAG AA contrast on
 * both schemes; focus is always visible; tables scroll sideways on a phone instead of squeezing.
 */
export const CONSOLE_STYLES = `
:root {
  --bg: #f6f7f9; --panel: #ffffff; --text: #1b1f24; --muted: #535b66; --line: #d5d9df;
  --accent: #0b57d0; --accent-text: #ffffff; --focus: #b45309;
  --allow-bg: #e6f4ea; --allow: #12612b; --warn-bg: #fff4d6; --warn: #7a4b00;
  --block-bg: #fde7e7; --block: #a11a1a; --new: #fff8c5; --code-bg: #eef1f5;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 15px; line-height: 1.45; color: var(--text); background: var(--bg);
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #111418; --panel: #1a1e24; --text: #e8eaed; --muted: #a9b1bb; --line: #333a44;
    --accent: #8ab4f8; --accent-text: #0b1320; --focus: #fbbf24;
    --allow-bg: #12351f; --allow: #8fdca6; --warn-bg: #3b2d05; --warn: #f5cf6b;
    --block-bg: #421616; --block: #ffaaa5; --new: #3a3510; --code-bg: #242a32;
  }
}
* { box-sizing: border-box; }
body { margin: 0; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.boot { padding: 2rem; color: var(--muted); }
.skip { position: absolute; left: -999px; top: 0; background: var(--panel); padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; top: .5rem; }
header.top {
  display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.25rem;
  padding: .6rem 1rem; background: var(--panel); border-bottom: 1px solid var(--line);
}
.brand { font-weight: 700; font-size: 1.05rem; margin: 0; }
nav.main { flex: 1 1 auto; min-width: 0; }
nav.main ul { display: flex; flex-wrap: wrap; gap: .25rem; list-style: none; margin: 0; padding: 0; }
nav.main a {
  display: inline-flex; align-items: center; gap: .35rem; padding: .35rem .65rem; border-radius: 6px;
  color: var(--text); text-decoration: none;
}
nav.main a:hover { background: var(--code-bg); }
nav.main a[aria-current="page"] { background: var(--accent); color: var(--accent-text); }
.count { background: var(--block); color: var(--panel); border-radius: 999px; padding: 0 .45rem; font-size: .8rem; font-weight: 700; }
.whoami { display: flex; flex-wrap: wrap; align-items: center; gap: .6rem; color: var(--muted); font-size: .9rem; min-width: 0; overflow-wrap: anywhere; }
main { padding: 1rem; max-width: 1280px; margin: 0 auto; }
main:focus { outline: none; }
h1 { font-size: 1.35rem; margin: .25rem 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 1rem; margin-bottom: 1rem; }
.filters, .toolbar { display: flex; flex-wrap: wrap; align-items: flex-end; gap: .75rem; margin: .75rem 0; }
#replay-result { margin-top: 1rem; display: flex; flex-direction: column; gap: .75rem; }
label { display: flex; flex-direction: column; gap: .2rem; font-size: .85rem; color: var(--muted); font-weight: 600; }
input, select, textarea {
  font: inherit; color: var(--text); background: var(--panel); border: 1px solid #7b8490;
  border-radius: 6px; padding: .4rem .5rem; min-height: 2.25rem;
}
textarea { width: 100%; min-height: 10rem; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85rem; }
button {
  font: inherit; cursor: pointer; border-radius: 6px; padding: .4rem .8rem; min-height: 2.25rem;
  border: 1px solid var(--accent); background: var(--accent); color: var(--accent-text); font-weight: 600;
}
button.secondary { background: var(--panel); color: var(--accent); }
button.danger { background: var(--block); border-color: var(--block); color: var(--panel); }
button:disabled { opacity: .6; cursor: default; }
.table-wrap { position: relative; overflow-x: auto; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
caption { text-align: left; padding: .5rem .75rem; color: var(--muted); font-size: .85rem; }
th, td { text-align: left; padding: .45rem .75rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); white-space: nowrap; }
tr:last-child td { border-bottom: none; }
td.nowrap { white-space: nowrap; }
/* Session IDs and params may be long: they wrap anywhere instead of pushing columns off-screen. */
td.long-id { overflow-wrap: anywhere; min-width: 7rem; max-width: 18rem; }
/* An approval's action with the rule that held it and its message, which wraps. */
td.held { min-width: 12rem; max-width: 24rem; }
.held-by { margin-top: .25rem; font-size: .85rem; overflow-wrap: anywhere; }
.summary { overflow-wrap: anywhere; }
tr.new td { background: var(--new); transition: background 2s; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.mono, code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85rem; }
pre { background: var(--code-bg); padding: .75rem; border-radius: 6px; overflow-x: auto; margin: 0; white-space: pre-wrap; word-break: break-word; }
.badge { color: var(--muted); display: inline-block; padding: .05rem .5rem; border-radius: 999px; font-size: .8rem; font-weight: 700; border: 1px solid currentColor; white-space: nowrap; }
.badge.Allow, .badge.delivered, .badge.ok, .badge.approved, .badge.current, .badge.resolved, .badge.active { color: var(--allow); background: var(--allow-bg); }
.badge.Warn, .badge.pending, .badge.conflicted, .badge.open, .badge.placed { color: var(--warn); background: var(--warn-bg); }
.badge.Block, .badge.failed, .badge.bad, .badge.denied, .badge.disabled, .badge.expired, .badge.erased { color: var(--block); background: var(--block-bg); }
.muted { color: var(--muted); }
.status-line { display: flex; align-items: center; gap: .5rem; color: var(--muted); font-size: .9rem; }
.dot { width: .6rem; height: .6rem; border-radius: 50%; background: var(--muted); display: inline-block; }
.dot.live { background: var(--allow); }
.dot.error { background: var(--block); }
.notice, .error { margin: .5rem 0; }
.error { color: var(--block); background: var(--block-bg); border: 1px solid var(--block); padding: .5rem .75rem; border-radius: 6px; }
.notice { background: var(--allow-bg); color: var(--allow); border: 1px solid var(--allow); padding: .5rem .75rem; border-radius: 6px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); font-weight: 600; }
dl.facts dd { margin: 0; word-break: break-word; }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 1rem; }
.signin { max-width: 28rem; margin: 4rem auto; }
.signin form { display: flex; flex-direction: column; gap: .75rem; }
.actions { display: flex; flex-wrap: wrap; gap: .4rem; }
.decide { display: flex; flex-direction: column; gap: .4rem; min-width: 14rem; }
.badge.used { color: var(--accent); background: var(--code-bg); }
.diff .add { background: var(--allow-bg); color: var(--allow); display: block; }
.diff .del { background: var(--block-bg); color: var(--block); display: block; }
fieldset { border: 1px solid var(--line); border-radius: 8px; padding: .75rem; margin: 0; display: flex; flex-wrap: wrap; gap: .75rem; align-items: flex-end; background: var(--panel); }
fieldset textarea { min-height: 14rem; }
fieldset > label:last-child { flex-basis: 100%; }
legend { font-weight: 600; padding: 0 .3rem; }
label.inline { flex-direction: row; align-items: center; gap: .35rem; color: var(--text); }
td .toolbar { margin: 0; gap: .4rem; }
td .toolbar button { white-space: nowrap; }
.diff .fold { color: var(--muted); font-style: italic; display: block; }
tr.changed td { background: var(--warn-bg); }
.replay-report { display: flex; flex-direction: column; gap: .75rem; }
h3 { font-size: 1rem; margin: .75rem 0 .25rem; }
details summary { cursor: pointer; margin: .75rem 0 .5rem; font-weight: 600; }
.panel .table-wrap { margin-top: .75rem; }
.panel > h2:first-child { margin-top: 0; }
#revisions td { vertical-align: middle; }
.error p { margin: 0; }
.error ul { margin: .4rem 0 0; padding-left: 1.25rem; }
/* A row of radio choices: as wide as its choices, side by side. */
fieldset.choice { display: inline-flex; gap: .4rem 1.25rem; padding: .4rem .75rem .6rem; }
fieldset.choice > label:last-child { flex-basis: auto; }
#holds { margin-bottom: 1rem; }
ul.plain { list-style: none; margin: 0; padding: 0; }
ul.plain li + li { margin-top: .15rem; }
.paths { display: flex; flex-wrap: wrap; gap: .25rem .5rem; overflow-wrap: anywhere; }
.erasure-report h3 { margin-top: 0; overflow-wrap: anywhere; }
form.confirm { border-color: var(--block); }
form.confirm > h2:first-child { margin-top: 0; }
.error .hint { margin-top: .4rem; color: var(--text); }
.danger-text { color: var(--block); }
#erasure-result:focus { outline: none; }
.visually-hidden {
  position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; border: 0; overflow: hidden;
  clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap;
}
@media (max-width: 640px) {
  :root { font-size: 14px; }
  header.top { padding: .5rem; }
  nav.main { order: 3; flex-basis: 100%; }
  nav.main ul { flex-wrap: wrap; }
  /* A table of cards: each row a block, each cell labelled with its column. */
  table.stack-narrow thead { display: none; }
  table.stack-narrow caption { display: block; }
  table.stack-narrow, table.stack-narrow tbody, table.stack-narrow tr, table.stack-narrow td { display: block; width: 100%; }
  table.stack-narrow tr { border-bottom: 1px solid var(--line); padding: .35rem 0; }
  table.stack-narrow td { border-bottom: none; max-width: none; }
  table.stack-narrow td[data-label]::before {
    content: attr(data-label); display: block; font-size: .75rem; font-weight: 600; color: var(--muted);
    text-transform: uppercase; letter-spacing: .03em;
  }
  table.stack-narrow .decide { min-width: 0; }
  .whoami .scopes { display: none; }
  main { padding: .6rem; }
  th, td { padding: .4rem .5rem; }
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dt { margin-top: .4rem; }
  td.hide-narrow, th.hide-narrow { display: none; }
}
`;
