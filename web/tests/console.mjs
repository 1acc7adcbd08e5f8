// The console's browser test, run by cmd/warden's TestConsoleBrowser
// against a live warden serve: it drives headless Chromium through
// playwright-core (no browser download) and saves a screenshot per step.
//
// Environment: WARDEN_URL, WARDEN_BIN (the warden binary, for the CLI),
// SECRET (the sensitive value no page or answer may show), TENANT_KEY,
// ADMIN_KEY, CHROMIUM, ARTIFACTS,
// MODULE_A and MODULE_B (two .wasm builds to install as one slot's
// generations), DIGEST_A (MODULE_A's hex sha256), GUARD_MODULE (the tenant
// guard domaindeny@0.1.0, as domaindeny.wasm) and GUARD_DIGEST (its hex
// sha256). Each step prints one line, "step <name> (<ms since the start>
// ms)"; a failure prints "FAIL <message>", saves failure.png and
// exits 1.
import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const base = env('WARDEN_URL');
const tenantKey = env('TENANT_KEY');
const adminKey = env('ADMIN_KEY');
const artifacts = env('ARTIFACTS');
const wait = 30_000;
const secret = env('SECRET');

// cli runs a warden client command as the tenant and returns its output.
const cli = (...args) => execFileSync(env('WARDEN_BIN'), args, {
  env: { ...process.env, WARDEN_SERVER: base, WARDEN_KEY: tenantKey }, encoding: 'utf8', timeout: wait,
});

// noSecret checks that no API answer about a session, its tasks and the
// tenant's approvals, and no page given, shows the sensitive value.
async function noSecret(page, session, tasks, pages) {
  const paths = [`/v1/sessions/${session}`, `/v1/sessions?limit=50`, '/v1/approvals?status=PENDING', '/v1/approvals?status=CONFIRMED'];
  for (const t of tasks) paths.push(`/v1/sessions/${session}/tasks/${t}`, `/v1/sessions/${session}/tasks/${t}/trace`);
  // The tenant's request rate covers these too: a 429 is waited out.
  const fetchAll = (paths) => page.evaluate(async ({ paths, key }) => {
    const out = {};
    for (const p of paths) {
      for (let i = 0; ; i++) {
        const r = await fetch(p, { headers: { Authorization: 'Bearer ' + key } });
        if (r.status === 429 && i < 20) {
          await new Promise((ok) => setTimeout(ok, 500));
          continue;
        }
        out[p] = r.status + ' ' + (await r.text());
        break;
      }
    }
    return out;
  }, { paths, key: tenantKey });
  const answers = await fetchAll(paths);
  for (const [p, body] of Object.entries(answers)) {
    check(body.startsWith('200 '), `${p}: ${body.slice(0, 200)}`);
    check(!body.includes(secret), `${p} shows the sensitive value: ${body}`);
  }
  const ids = [];
  for (const p of paths.filter((p) => p.startsWith('/v1/approvals'))) {
    for (const a of JSON.parse(answers[p].slice(4)).approvals || []) ids.push(a.id);
  }
  const each = await fetchAll(ids.map((id) => '/v1/approvals/' + id));
  for (const [p, body] of Object.entries(each)) {
    check(body.startsWith('200 ') && !body.includes(secret), `${p} shows the sensitive value: ${body}`);
  }
  for (const [name, p] of pages) {
    const html = await p.content();
    const text = await p.evaluate(() => document.body.innerText);
    check(!html.includes(secret) && !text.includes(secret), `the ${name} page shows the sensitive value`);
  }
  return paths.length + ids.length;
}

const browser = await chromium.launch({
  executablePath: env('CHROMIUM'),
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
let current;
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name + '.png'), fullPage: true });
const t0 = Date.now();
const step = (name) => console.log(`step ${name} (${Date.now() - t0} ms)`);

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

// offline fails any request that leaves the server: the console loads
// nothing from a CDN or a font service.
const external = [];
async function offline(ctx) {
  await ctx.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(base + '/') || url.startsWith('data:')) return route.continue();
    external.push(url);
    return route.abort();
  });
}

// labelled checks that every form control on the page has a label.
async function labelled(page, view) {
  const bare = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea')]
    .filter((el) => !el.labels?.length && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
    .map((el) => el.outerHTML));
  check(bare.length === 0, `${view}: controls without a label: ${bare.join(' ')}`);
}

// fits checks at a phone's width (390 px) that the view does not scroll
// sideways, and saves a screenshot of it.
async function fits(page, view, name) {
  const size = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  await shot(page, name);
  await page.setViewportSize(size);
  check(scroll <= client, `${view} at 390 px scrolls sideways: ${scroll} px wide in ${client}`);
}

// rows waits until the sessions table shows n rows (an answer asked for
// before the filter changed may still be on its way): false if it never
// does.
// inChinese waits for a view's Chinese heading and checks that none of
// the console's English texts given is left in it.
async function inChinese(page, heading, english, name) {
  await page.getByRole('heading', { name: heading }).first().waitFor({ timeout: wait });
  const text = await page.locator('#main').innerText();
  for (const s of english) check(!text.includes(s), `${name}: English text "${s}" in the Chinese console`);
  await shot(page, name);
}

async function rowsShown(page, n) {
  try {
    await page.waitForFunction((n) => document.querySelectorAll('table.sessions tbody tr').length === n, n, { timeout: wait });
    return true;
  } catch {
    return false;
  }
}

async function login(page, key) {
  await page.goto(base + '/');
  await page.getByLabel('API key', { exact: true }).fill(key);
  await page.getByLabel('API key', { exact: true }).press('Enter');
}

try {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  await offline(ctx);
  const page = await ctx.newPage();
  current = page;
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (/Content Security Policy/.test(m.text())) errors.push(m.text()); });

  // A bad key is refused with the API's own error.
  await login(page, 'not-a-key');
  const refused = page.getByRole('alert');
  await refused.waitFor({ timeout: wait });
  const text = await refused.innerText();
  check(text.includes('unauthorized') && text.includes('a valid tenant API key is required'), 'bad key: ' + text);
  await labelled(page, 'login');
  await shot(page, '01-login-refused');
  step('bad key refused');

  // A tenant key opens the tenant's views.
  await login(page, tenantKey);
  await page.getByRole('heading', { name: 'Sessions' }).waitFor({ timeout: wait });
  await page.getByRole('button', { name: 'New session' }).click();
  await page.getByRole('heading', { name: /^Session / }).waitFor({ timeout: wait });
  await page.getByText('● live').waitFor({ timeout: wait });
  const agentLocale = await page.locator('[data-agent-locale]').getAttribute('data-agent-locale', { timeout: wait });
  check(/^(zh-CN|en)$/.test(agentLocale), "the agent's language is not shown: " + agentLocale);
  const sessionURL = page.url();
  const sessionID = decodeURIComponent(sessionURL.split('#/sessions/')[1].split('/')[0]);
  await shot(page, '02-session-open');
  step('tenant login, session ' + sessionID);

  // The approvals, in a second tab, before anything is held: nothing
  // pending, no count in the navigation.
  await page.evaluate(() => { window.__stayed = true; });
  const tab = await ctx.newPage();
  tab.on('pageerror', (e) => errors.push(e.message));
  await login(tab, tenantKey);
  // The views have one-key shortcuts: "a" is Approvals.
  await tab.getByRole('heading', { name: 'Sessions' }).waitFor({ timeout: wait });
  await tab.keyboard.press('a');
  await tab.getByText('No pending approvals.').waitFor({ timeout: wait });
  check(await tab.locator('nav [data-pending]').count() === 0, 'a pending count with nothing pending');
  await tab.evaluate(() => { window.__stayed = true; });
  // From here the tab reads no list of approvals: what is pending comes
  // over the tenant's event stream.
  const listReads = [];
  tab.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname === '/v1/approvals') listReads.push(u.search);
  });

  // A write held from the CLI, in a session of its own, appears in the
  // tab without a reload, with the pending count.
  const waitingID = cli('sessions', 'new').trim().split(/\s+/).pop();
  const sent = cli('sessions', 'send', '--wait', '20s', waitingID, 'create the shop website with domain shop.example.com in space sp-1');
  check(/SUSPENDED|approval/i.test(sent), 'the CLI message did not hold its write: ' + sent);
  current = tab;
  await tab.locator('article.approval', { hasText: waitingID }).waitFor({ timeout: wait });
  await tab.locator('nav [data-pending="1"]').waitFor({ timeout: wait });
  check(await tab.evaluate(() => window.__stayed === true), 'the approvals page reloaded');
  check(listReads.length === 0, 'the approvals were polled, not streamed: ' + listReads.join(' '));
  check(await tab.locator('[data-stream="live"]').count() === 1, 'the approvals page does not say it is live');
  await shot(tab, '03a-approval-from-cli-live');
  step('approval held from the CLI shown live, 1 pending (session ' + waitingID + ')');

  // A message whose write is held: the trace shows the held call as it
  // happens, over the event stream.
  current = page;
  await page.getByLabel('Message', { exact: true }).fill('create the shop website with domain shop.example.com in space sp-1');
  await page.getByLabel('Message', { exact: true }).press('Enter');
  await page.locator('tr[data-tool="create_website"]', { hasText: 'APPROVAL_REQUIRED' }).waitFor({ timeout: wait });
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor({ timeout: wait });
  await labelled(page, 'session');
  await shot(page, '03-write-held');
  // The held call's event names the guard that decided it and every
  // guard that ran, each with its plugin's slot generation.
  const held = page.locator('tr[data-tool="create_website"]', { hasText: 'APPROVAL_REQUIRED' }).first();
  check(await held.locator('.decider[data-generation="1"]', { hasText: 'WriteGate' }).count() === 1, 'the held call does not name WriteGate gen 1');
  check(await held.locator('details.guards li[data-phase="before"][data-generation="1"]').count() >= 4, 'the held call does not name its guards\' generations');
  step('write held');

  // The pending approval, in the second tab, shows the masked summary.
  current = tab;
  const card = tab.locator('article.approval', { hasText: sessionID });
  await card.waitFor({ timeout: wait });
  await tab.locator('nav [data-pending="2"]').waitFor({ timeout: wait });
  const summary = await card.innerText();
  check(summary.includes('Sho****Site'), 'no masked name in the approval: ' + summary);
  check(!(await tab.content()).includes('Shop Front Site'), 'the sensitive name shows unmasked on the approvals page');
  await labelled(tab, 'approvals');
  await shot(tab, '04-approval-pending');
  await fits(tab, 'approvals', '04b-approvals-390px');
  step('approval pending, masked');
  // By keyboard: focus the decision and press Enter.
  await card.getByRole('button', { name: 'Confirm' }).focus();
  await tab.keyboard.press('Enter');
  await card.waitFor({ state: 'detached', timeout: wait });
  await tab.locator('nav [data-pending="1"]').waitFor({ timeout: wait });
  check(listReads.length === 0, 'the approvals were polled, not streamed: ' + listReads.join(' '));
  step('confirmed');
  // Who answered, and when, on the confirmed approval.
  await tab.getByLabel('Status', { exact: true }).selectOption('CONFIRMED');
  const answered = tab.locator('article.approval', { hasText: sessionID });
  await answered.locator('[data-answered-by]').waitFor({ timeout: wait });
  const by = await answered.innerText();
  check(/answered CONFIRM .+ by tenant \S+ key sha256:[0-9a-f]{12}/.test(by), 'who answered is not shown: ' + by);
  await tab.getByLabel('Status', { exact: true }).selectOption('PENDING');
  await tab.locator('nav [data-pending="1"]').waitFor({ timeout: wait });
  // The confirmed ones were read from the list, once, as asked.
  check(listReads.length === 1 && listReads[0].startsWith('?status=CONFIRMED'), 'list reads for the confirmed approvals: ' + listReads.join(' '));
  listReads.length = 0;
  step('who answered shown');
  // The console's language is a setting: Chinese, then English again; the
  // texts the API sends stay as sent.
  const language = tab.locator('header.top .lang select');
  await language.selectOption('zh-CN');
  await tab.getByRole('heading', { name: '审批' }).waitFor({ timeout: wait });
  check(await tab.evaluate(() => document.documentElement.lang) === 'zh-CN', 'the page language did not follow the setting');
  check((await tab.locator('nav').innerText()).includes('会话'), 'the navigation is not in Chinese');
  await shot(tab, '04c-approvals-zh');
  await language.selectOption('en');
  await tab.getByRole('heading', { name: 'Approvals' }).waitFor({ timeout: wait });
  step('console language: Chinese and back');

  // The first tab, never reloaded, sees the write succeed and the task
  // finish from the event stream.
  current = page;
  await page.locator('tr[data-tool="create_website"]', { hasText: 'SUCCESS' }).waitFor({ timeout: wait });
  await page.locator('#h-task .badge', { hasText: 'DONE' }).waitFor({ timeout: wait });
  check(await page.evaluate(() => window.__stayed === true), 'the session page reloaded');
  await page.locator('.graph .node.s-DONE').first().waitFor({ timeout: wait });
  await shot(page, '05-task-done-live');
  await fits(page, 'session', '05b-task-done-390px');
  step('task done, live');

  // A second message asks the user back; the answer, given in the page,
  // lets the task finish.
  current = page;
  await page.getByLabel('Message', { exact: true }).fill('rename the site');
  await page.getByLabel('Message', { exact: true }).press('Enter');
  await page.getByRole('heading', { name: 'Waiting for an answer' }).waitFor({ timeout: wait });
  await page.getByText('What should the site be called?').first().waitFor({ timeout: wait });
  await labelled(page, 'follow-up');
  await shot(page, '06-follow-up');
  // The approvals tab learns of the question over the tenant's stream.
  await tab.locator(`[data-ask="${sessionID}/t2"]`).waitFor({ timeout: wait });
  await page.getByLabel('Answer', { exact: true }).fill('Autumn Sale');
  await page.getByLabel('Answer', { exact: true }).press('Enter');
  await page.locator('#h-task', { hasText: 't2' }).locator('.badge', { hasText: 'DONE' }).waitFor({ timeout: wait });
  await page.getByText('the site is called Autumn Sale').first().waitFor({ timeout: wait });
  await shot(page, '07-follow-up-answered');
  await tab.locator(`[data-ask="${sessionID}/t2"]`).waitFor({ state: 'detached', timeout: wait });
  check(listReads.length === 0, 'the approvals were polled, not streamed: ' + listReads.join(' '));
  step('follow-up answered; the approvals tab saw it wait and go, over the stream');

  // A third message finds the model's script used up: the run fails. The
  // task says why, with its code; the trace ends with the task's final
  // event, and the graph shows no node still running.
  await page.getByLabel('Message', { exact: true }).fill('publish the site');
  await page.getByLabel('Message', { exact: true }).press('Enter');
  await page.locator('#h-task', { hasText: 't3' }).locator('.badge', { hasText: 'FAILED' }).waitFor({ timeout: wait });
  const cause = page.getByRole('group', { name: 'Why it failed' });
  await cause.waitFor({ timeout: wait });
  const why3 = await cause.innerText();
  check(why3.includes('run_failed') && why3.includes('the runtime failed while running the task:') && !why3.includes('an internal error of the runtime ('), 'failure cause: ' + why3);
  await page.locator('table.trace tr[data-kind="TASK"][data-status="FAILED"]').waitFor({ timeout: wait });
  check(await page.locator('.graph .node.s-RUNNING').count() === 0, 'a node of the failed task still shows RUNNING');
  check(await page.locator('table.trace tr time').count() > 0, 'the trace shows no times');
  await page.locator('.timing', { hasText: 'took' }).waitFor({ timeout: wait });
  await shot(page, '07a-runtime-failure');
  await fits(page, 'failed task', '07b-runtime-failure-390px');
  step('runtime failure read with its cause: ' + why3.replace(/\s+/g, ' ').slice(0, 160));

  // No page or API answer about the tasks shows the sensitive name.
  await page.goto(base + '/#/sessions/' + sessionID + '/t1');
  await page.locator('#h-task', { hasText: 't1' }).waitFor({ timeout: wait });
  await page.locator('table.trace tr[data-tool="create_website"]').first().waitFor({ timeout: wait });
  await page.locator('table.trace details').first().evaluate((d) => { d.open = true; });
  await tab.bringToFront();
  const checked = await noSecret(page, sessionID, ['t1', 't2', 't3'], [['session', page], ['approvals', tab]]);
  await page.goto(base + '/#/sessions/' + waitingID);
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor({ timeout: wait });
  await noSecret(page, waitingID, ['t1'], [['waiting session', page]]);
  await fits(page, 'waiting session', '07c-waiting-session-390px');
  await tab.close();
  step(`no sensitive value in ${checked} API answers and the pages`);

  // A link to a task that does not exist says so.
  await page.goto(base + '/#/sessions/' + sessionID + '/t99');
  await page.getByRole('heading', { name: 'Task not found' }).waitFor({ timeout: wait });
  await page.goto(base + '/#/sessions/s_nope');
  await page.getByRole('heading', { name: 'Session not found' }).waitFor({ timeout: wait });
  check(!(await page.content()).includes('No tasks yet'), 'an unknown session reads as an empty one');
  await shot(page, '07d-not-found');
  step('unknown task and session: not found');

  // The sessions list finds the failed and the waiting session by filter.
  await page.goto(base + '/#/sessions');
  await page.getByRole('heading', { name: 'Sessions' }).waitFor({ timeout: wait });
  await page.locator(`tr[data-session="${sessionID}"][data-status="FAILED"]`).waitFor({ timeout: wait });
  await page.getByLabel('Status').selectOption('FAILED');
  await page.locator(`tr[data-session="${sessionID}"]`).waitFor({ timeout: wait });
  await page.locator(`tr[data-session="${waitingID}"]`).waitFor({ state: 'detached', timeout: wait });
  check(await rowsShown(page, 1), 'the failed filter lists other sessions');
  await shot(page, '07e-sessions-failed');
  await fits(page, 'sessions, failed', '07f-sessions-failed-390px');
  await page.getByLabel('Status').selectOption('SUSPENDED');
  await page.locator(`tr[data-session="${waitingID}"][data-status="SUSPENDED"]`).waitFor({ timeout: wait });
  await page.locator(`tr[data-session="${sessionID}"]`).waitFor({ state: 'detached', timeout: wait });
  check(await rowsShown(page, 1), 'the waiting filter lists other sessions');
  await shot(page, '07g-sessions-waiting');
  await page.getByLabel('Status').selectOption('');
  step('failed and waiting sessions found by filter');

  // In Chinese, the sessions list, a task and the plugins speak it (the
  // texts the API sent stay as sent); then English again.
  const setting = page.locator('header.top .lang select');
  await setting.selectOption('zh-CN');
  await page.locator(`tr[data-session="${sessionID}"]`).waitFor({ timeout: wait });
  await inChinese(page, '会话', ['Latest task', 'Last activity', 'New session', ' ago'], '07k-sessions-zh');
  await page.goto(base + '/#/sessions/' + sessionID + '/t1');
  await page.locator('#h-task', { hasText: '任务 t1' }).waitFor({ timeout: wait });
  await page.locator('table.trace tr[data-tool="create_website"]').first().waitFor({ timeout: wait });
  await inChinese(page, '追踪', ['Tasks', 'Graph', 'Trace', 'Evidence', 'Output:'], '07l-task-zh');
  await page.goto(base + '/#/plugins');
  await inChinese(page, '插件', ['Plugins', 'Install a module', 'Refresh', 'No plugins installed'], '07m-plugins-zh');
  await setting.selectOption('en');
  await page.getByRole('heading', { name: 'Plugins', exact: true }).waitFor({ timeout: wait });
  check(await page.evaluate(() => document.documentElement.lang) === 'en', 'the page language did not go back to English');
  await page.evaluate(() => document.activeElement?.blur());
  step('sessions, task and plugins in Chinese, and back');

  // The session list finds the session by the text of a task: "s" opens
  // it, "/" focuses the search.
  await page.locator('body').press('s');
  await page.getByRole('heading', { name: 'Sessions' }).waitFor({ timeout: wait });
  // "/" focuses the search field once the view has drawn it; a press that
  // came before it is pressed again.
  await page.locator('[data-search]').waitFor({ timeout: wait });
  for (let i = 0; ; i++) {
    await page.locator('body').press('/');
    try {
      await page.waitForFunction(() => document.activeElement?.id === 'q', null, { timeout: 3000 });
      break;
    } catch (e) {
      if (i >= 4) throw e;
    }
  }
  await page.keyboard.type('rename the site');
  await page.locator(`table.list tr[data-session="${sessionID}"]`).waitFor({ timeout: wait });
  await page.locator('table.list tr', { hasText: sessionID }).locator('td', { hasText: 'publish the site' }).waitFor({ timeout: wait });
  await page.keyboard.type(' nowhere');
  await page.getByText('No session loaded matches.').waitFor({ timeout: wait });
  await page.keyboard.press('Escape');
  step('session found by text');

  // The feedback per tool counts the calls the two tasks made.
  await page.locator('body').press('f');
  await page.getByRole('heading', { name: 'Tool feedback' }).waitFor({ timeout: wait });
  // The records are written behind the run (the recorder batches them),
  // so the view is reloaded until the write's row shows.
  const rows = page.locator('table.list tr', { hasText: 'create_website' }).first();
  for (let i = 0; !(await rows.count()); i++) {
    if (i === 60) throw new Error('no tool feedback row for create_website');
    await page.waitForTimeout(500);
    await page.locator('body').press('s');
    await page.locator('body').press('f');
    await page.getByRole('heading', { name: 'Tool feedback' }).waitFor({ timeout: wait });
  }
  await shot(page, '08-feedback');
  step('tool feedback');

  // The tenant's plugins: "p" opens them. A file that is not a module is
  // refused with the server's message; the guard is installed, pinned by
  // the sha256 the page computes (as Go computed it here), and listed.
  const guardDigest = env('GUARD_DIGEST');
  await page.locator('body').press('p');
  await page.getByRole('heading', { name: 'Plugins', exact: true }).waitFor({ timeout: wait });
  await page.getByText('No plugins installed').waitFor({ timeout: wait });
  const moduleInput = page.getByLabel('Module (.wasm)');
  const installButton = page.getByRole('button', { name: 'Install', exact: true });
  await moduleInput.setInputFiles({ name: 'junk.wasm', mimeType: 'application/wasm', buffer: Buffer.from('not a module') });
  await installButton.click();
  const junk = page.getByRole('alert').filter({ hasText: 'not_wasm' });
  await junk.waitFor({ timeout: wait });
  check((await junk.innerText()).includes('the module is not WebAssembly'), 'not a module: ' + (await junk.innerText()));
  await moduleInput.setInputFiles(env('GUARD_MODULE'));
  await page.locator(`output[data-sha256="${guardDigest}"]`).waitFor({ timeout: wait });
  check(await page.getByLabel("Name (its manifest's)").inputValue() === 'domaindeny', 'the name is not taken from the file name');
  // An expected digest that is not the file's: nothing is sent.
  await page.getByLabel('Expected SHA-256 (optional)').fill('0'.repeat(64));
  await installButton.click();
  const mismatch = page.getByRole('alert').filter({ hasText: 'digest_mismatch' });
  await mismatch.waitFor({ timeout: wait });
  check((await mismatch.innerText()).includes(`the file's sha256 is ${guardDigest}, not the expected ${'0'.repeat(64)}: nothing was sent`), 'mismatch: ' + (await mismatch.innerText()));
  await page.getByLabel('Expected SHA-256 (optional)').fill('sha256:' + guardDigest);
  await installButton.click();
  await page.getByRole('status').filter({ hasText: 'Installed domaindeny@0.1.0, a guard' }).waitFor({ timeout: wait });
  const plugin = page.locator('tr[data-plugin="domaindeny"][data-version="0.1.0"]');
  await plugin.waitFor({ timeout: wait });
  const listed = await plugin.innerText();
  for (const want of ['guard', 'installed', 'by tenant', guardDigest.slice(0, 12), 'none']) {
    check(listed.includes(want), `plugin row without ${want}: ${listed}`);
  }
  await labelled(page, 'plugins');
  await shot(page, '09-plugin-installed');
  await fits(page, 'plugins', '09-plugins-390px');
  step('guard installed from a file');

  // A skill attaching it, from a JSON file ("k" opens the skills, "n" the
  // upload): the first upload's two problems are listed one by one, with
  // the fields they are about; fixed, the contract is kept as written.
  const skillKey = 'cms.website.guarded';
  const contractText = `{
  "tools": {
    "find_website": {"label": "Find a website", "success": {"path": "code", "op": "EQ", "value": 200}},
    "create_website": {"label": "Create a website", "sideEffect": "WRITE", "idempotencyKey": ["domain"], "timeoutMs": 60000,
      "success": {"path": "code", "op": "EQ", "value": 200}, "error": {"code": "code", "message": "msg"},
      "verify": {"tool": "find_website", "args": {"domain": {"from": "call.domain"}}}}
  },
  "guards": [{"ref": "domaindeny@9.9.9", "phase": "before", "position": "after:ParamContract", "config": {"deny": ["evil.org"]}}]
}`;
  const skillFile = `{"skill_name": "Guarded website creation", "skill_manual": "Create the website the user asks for, unless denied.",
"skill_contract": ${contractText}, "toolNames": ["find_website", "create_website", "no_such_tool"]}`;
  await page.locator('body').press('k');
  await page.getByRole('heading', { name: 'Skills', exact: true }).waitFor({ timeout: wait });
  await page.locator('tr[data-skill="cms.website"]').waitFor({ timeout: wait });
  await page.locator('body').press('n');
  await page.getByRole('heading', { name: 'Upload a skill' }).waitFor({ timeout: wait });
  // The key field has the focus: what is typed goes there, not to the shortcuts.
  await page.waitForFunction(() => document.activeElement?.id === 'skill-key', null, { timeout: wait });
  await page.keyboard.type(skillKey);
  check(await page.getByLabel('Skill key').inputValue() === skillKey, 'the typed key did not reach the key field');
  await page.getByLabel('Fill from a JSON file (optional)').setInputFiles({ name: 'guarded.json', mimeType: 'application/json', buffer: Buffer.from(skillFile) });
  await page.getByRole('status').filter({ hasText: 'Read guarded.json' }).waitFor({ timeout: wait });
  await page.getByRole('button', { name: 'Upload', exact: true }).click();
  const problems = page.locator('#skill-problems li > span');
  await problems.first().waitFor({ timeout: wait });
  const listedProblems = await problems.allInnerTexts();
  const wantProblems = [
    "toolNames[2]: tool no_such_tool is not served by the agent's MCP servers",
    'guards[0]: ref domaindeny@9.9.9 is not installed for tenant acme (PUT /v1/plugins/{name})',
  ];
  check(JSON.stringify(listedProblems) === JSON.stringify(wantProblems), 'skill problems: ' + JSON.stringify(listedProblems));
  check(await page.getByLabel('Tool names').getAttribute('aria-invalid') === 'true', 'Tool names not marked invalid');
  check(await page.getByLabel('Contract (JSON)').getAttribute('aria-invalid') === 'true', 'Contract not marked invalid');
  await labelled(page, 'skill upload');
  await shot(page, '10-skill-refused');
  await fits(page, 'skill upload', '10-skill-refused-390px');
  step('skill refused, its problems listed');
  const fixed = contractText.replace('domaindeny@9.9.9', 'domaindeny@0.1.0');
  await page.getByLabel('Tool names').fill('find_website, create_website');
  await page.getByLabel('Contract (JSON)').fill(fixed);
  await page.getByLabel('Contract (JSON)').press('Control+Enter');
  await page.getByRole('heading', { name: 'Skill ' + skillKey }).waitFor({ timeout: wait });
  await page.getByRole('status').filter({ hasText: `Uploaded skill ${skillKey}` }).waitFor({ timeout: wait });
  const kept = await page.getByLabel('Contract as written').textContent();
  check(kept === fixed, 'the contract was not kept as written: ' + kept);
  await shot(page, '11-skill-uploaded');
  step('skill uploaded, attaching the guard');
  // Edited in place: the key stays, the contract comes back as written.
  await page.getByRole('button', { name: 'Edit', exact: true }).click();
  check(await page.getByLabel('Contract (JSON)').inputValue() === fixed, 'the editor does not hold the contract as written');
  await page.getByLabel('Description (optional)').fill('Denies evil.org');
  await page.getByRole('button', { name: 'Upload', exact: true }).click();
  await page.getByRole('status').filter({ hasText: `Updated skill ${skillKey}` }).waitFor({ timeout: wait });
  await page.locator('tr', { hasText: 'Description' }).filter({ hasText: 'Denies evil.org' }).waitFor({ timeout: wait });
  step('skill edited');

  // Attached, the guard's deletion is refused, naming the skill; the skill
  // goes first (its deletion confirmed by keyboard), then the guard.
  await page.getByRole('link', { name: 'domaindeny@0.1.0' }).click();
  await page.getByRole('heading', { name: 'Plugin domaindeny' }).waitFor({ timeout: wait });
  await page.locator('article[data-version="0.1.0"] .badge', { hasText: 'attached' }).waitFor({ timeout: wait });
  await page.getByRole('button', { name: 'Delete plugin domaindeny' }).click();
  await page.getByRole('button', { name: 'Yes, delete' }).click();
  const attached = page.locator('[role="alert"][data-code="plugin_attached"]');
  await attached.waitFor({ timeout: wait });
  const why = await attached.innerText();
  check(why.includes(`plugin domaindeny is attached by skills ${skillKey}: detach it from them first`), 'refused delete: ' + why);
  await labelled(page, 'plugin');
  await shot(page, '12-plugin-delete-refused');
  await fits(page, 'plugin', '12-plugin-delete-refused-390px');
  step('guard delete refused: attached by ' + skillKey);
  await attached.getByRole('link', { name: skillKey }).click();
  await page.getByRole('heading', { name: 'Skill ' + skillKey }).waitFor({ timeout: wait });
  await fits(page, 'skill', '13-skill-390px');
  await page.getByRole('button', { name: 'Delete skill ' + skillKey }).click();
  // The question takes the focus: Enter answers it.
  await page.waitForFunction(() => document.activeElement?.textContent === 'Yes, delete', null, { timeout: wait });
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: `Deleted skill ${skillKey}` }).waitFor({ timeout: wait });
  await page.locator('tr[data-skill="cms.website"]').waitFor({ timeout: wait });
  check(await page.locator(`tr[data-skill="${skillKey}"]`).count() === 0, 'the deleted skill is still listed');
  await fits(page, 'skills', '14-skills-390px');
  step('skill deleted');
  await page.locator('body').press('p');
  await page.locator('tr[data-plugin="domaindeny"] a').click();
  await page.getByRole('heading', { name: 'Plugin domaindeny' }).waitFor({ timeout: wait });
  await page.locator('article[data-version="0.1.0"] .badge', { hasText: 'installed' }).waitFor({ timeout: wait });
  await page.getByRole('button', { name: 'Delete plugin domaindeny' }).click();
  await page.getByRole('button', { name: 'Yes, delete' }).click();
  await page.getByRole('status').filter({ hasText: 'Deleted plugin domaindeny: domaindeny@0.1.0.' }).waitFor({ timeout: wait });
  await page.getByText('No plugins installed').waitFor({ timeout: wait });
  await shot(page, '15-plugin-deleted');
  step('guard deleted');

  // A 30 KB message, sent in a session of its own, is folded wherever it
  // is shown: its start, with "show more", and the page stays short.
  current = page;
  await page.locator('body').press('s');
  await page.getByRole('heading', { name: 'Sessions' }).waitFor({ timeout: wait });
  await page.getByRole('button', { name: 'New session' }).click();
  await page.getByRole('heading', { name: /^Session / }).waitFor({ timeout: wait });
  const longText = 'the long message '.repeat(1800).slice(0, 30000);
  await page.locator('#msg').focus();
  await page.waitForFunction(() => document.activeElement?.id === 'msg');
  await page.locator('#msg').fill(longText);
  await page.locator('#msg-size', { hasText: '30,000 / 32,768 bytes' }).waitFor({ timeout: wait });
  await page.locator('#msg').press('Enter');
  await page.locator('.objective button', { hasText: 'show more (30,000 characters)' }).waitFor({ timeout: wait });
  const shown = await page.evaluate(() => document.body.innerText.split('the long message').length - 1);
  check(shown < 200, `the 30 KB message is printed whole: ${shown} of its 1,765 repeats shown`);
  const tall = await page.evaluate(() => document.documentElement.scrollHeight);
  check(tall < 4000, `the page of a 30 KB message is ${tall} px tall`);
  await shot(page, '07h-long-message');
  await fits(page, '30 KB message', '07i-long-message-390px');
  await page.locator('.objective button', { hasText: 'show more' }).click();
  await page.locator('.objective button', { hasText: 'show less' }).waitFor({ timeout: wait });
  step(`a 30 KB message folded (${tall} px tall)`);

  // A key the server no longer accepts (as after its revocation) sends
  // the console back to the login with the API's reason.
  await page.locator('body').press('s');
  await page.getByRole('heading', { name: 'Sessions' }).waitFor({ timeout: wait });
  await page.evaluate(() => sessionStorage.setItem('warden.key', 'revoked-key'));
  // A read of the page's own (the pending count) may get there first and
  // take the button away: the login is what counts.
  await page.getByRole('button', { name: 'Refresh' }).click({ timeout: 5000 }).catch(() => {});
  await page.getByLabel('API key', { exact: true }).waitFor({ timeout: wait });
  const back = await page.getByRole('alert').innerText();
  check(back.includes('unauthorized'), 'back at login without the reason: ' + back);
  check(await page.evaluate(() => sessionStorage.getItem('warden.key')) === null, 'the refused key is kept');
  await shot(page, '16-revoked-key-login');
  step('a refused key: back at login');

  // The platform's views: install two generations of a slot, roll back.
  const admin = await browser.newContext({ viewport: { width: 1280, height: 1000 }, colorScheme: 'dark' });
  await offline(admin);
  const ap = await admin.newPage();
  current = ap;
  ap.on('pageerror', (e) => errors.push(e.message));
  ap.on('console', (m) => { if (/Content Security Policy/.test(m.text())) errors.push(m.text()); });
  await login(ap, adminKey);
  await ap.getByRole('heading', { name: 'Plugin slots' }).waitFor({ timeout: wait });
  const install = async (file) => {
    await ap.getByLabel('Slot', { exact: true }).fill('Probe');
    await ap.getByLabel('Module (.wasm)').setInputFiles(file);
    await ap.getByRole('button', { name: 'Install', exact: true }).click();
    await ap.getByRole('status').filter({ hasText: 'Installed Probe' }).waitFor({ timeout: wait });
  };
  const serving = (n) => ap.locator(`article[data-slot="Probe"] [data-current="${n}"]`).waitFor({ timeout: wait });
  await install(env('MODULE_A'));
  await serving(1);
  await install(env('MODULE_B'));
  await serving(2);
  await ap.locator('article[data-slot="Probe"] tr[data-generation="2"]').waitFor({ timeout: wait });
  await labelled(ap, 'slots');
  await shot(ap, '20-slot-two-generations');
  step('installed generations 1 and 2');
  await ap.locator('article[data-slot="Probe"]').getByRole('button', { name: 'Roll back', exact: true }).click();
  await serving(3);
  const digest = await ap.locator('article[data-slot="Probe"] header .digest').getAttribute('title');
  check(digest.replace(/^sha256:/, '') === env('DIGEST_A'), `rolled back to ${digest}, want ${env('DIGEST_A')}`);
  await shot(ap, '21-slot-rolled-back');
  // No two labels of a chart overlap, at 1,280 px and at 390 px.
  const overlapping = () => ap.evaluate(() => {
    const bad = [];
    for (const svg of document.querySelectorAll('svg.histogram, svg.columns')) {
      const boxes = [...svg.querySelectorAll('text')].map((t) => ({ t: t.textContent, r: t.getBoundingClientRect() }));
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const a = boxes[i].r;
          const b = boxes[j].r;
          if (a.width && b.width && a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) {
            bad.push(`${boxes[i].t} / ${boxes[j].t}`);
          }
        }
      }
    }
    return bad;
  });
  let overlap = await overlapping();
  check(overlap.length === 0, 'chart labels overlap at 1,280 px: ' + overlap.join(', '));
  const wide = ap.viewportSize();
  await ap.setViewportSize({ width: 390, height: 844 });
  overlap = await overlapping();
  await shot(ap, '21b-slots-390px');
  await ap.setViewportSize(wide);
  check(overlap.length === 0, 'chart labels overlap at 390 px: ' + overlap.join(', '));
  await ap.locator('article[data-slot="Probe"]').screenshot({ path: path.join(artifacts, '22-slot-probe.png') });
  step('rolled back');
  // The rollout: this instance serves the desired generation; the history
  // in the store counts each generation's calls and probes, and any kept
  // one serves again.
  const probe = ap.locator('article[data-slot="Probe"]');
  await probe.locator('table.rollout tr[data-serving="3"]').waitFor({ timeout: wait });
  check(await probe.locator('table.kept tr[data-kept="1"][data-calls="0"]').count() === 1, 'generation 1 has no counters in the history');
  await probe.getByRole('button', { name: 'Roll back to generation 2' }).click();
  await serving(4);
  await probe.locator('table.rollout tr[data-serving="4"]').waitFor({ timeout: wait });
  await probe.screenshot({ path: path.join(artifacts, '22b-slot-history.png') });
  step('rolled back to generation 2 from the history');
  await ap.keyboard.press('i');
  await ap.getByRole('heading', { name: 'Instances' }).waitFor({ timeout: wait });
  await ap.locator('td', { hasText: 'this instance' }).waitFor({ timeout: wait });
  await shot(ap, '23-instances');
  step('instances');
  // The platform's sessions: every tenant's, by status.
  await ap.keyboard.press('s');
  await ap.getByRole('heading', { name: 'Sessions' }).waitFor({ timeout: wait });
  await ap.getByLabel('Status').selectOption('FAILED');
  await ap.locator('table.sessions tbody tr[data-status="FAILED"]', { hasText: 'acme' }).waitFor({ timeout: wait });
  await ap.locator(`table.sessions tbody tr[data-session="${waitingID}"]`).waitFor({ state: 'detached', timeout: wait });
  check(await rowsShown(ap, 1), 'the platform lists other sessions as failed');
  await shot(ap, '24-platform-sessions-failed');
  await fits(ap, 'platform sessions', '24-platform-sessions-390px');
  step('platform: every tenant\'s failed sessions');

  check(errors.length === 0, 'page errors or policy violations: ' + errors.join('; '));
  check(external.length === 0, 'requests left the server: ' + external.join(' '));
  step('offline: no request left the server; every control labelled');
  await browser.close();
} catch (e) {
  console.log('FAIL ' + (e?.message || e));
  if (current) await shot(current, 'failure').catch(() => {});
  await browser.close().catch(() => {});
  process.exit(1);
}
