// Protocol checks of the dev IdP: run with `npm test` (node --test) in this folder.
// Starts server.mjs on a free loopback port and drives the authorization-code flow with plain fetch.

import { spawn } from 'node:child_process';
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

const REDIRECT = 'http://127.0.0.1:38080/auth/callback';

async function freePort() {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address();
  await new Promise((resolve) => { srv.close(resolve); });
  return port;
}

// A browser stand-in: remembers cookies by name and never follows redirects on its own.
class Browser {
  constructor() { this.cookies = new Map(); }

  async fetch(url, init = {}) {
    const headers = new Headers(init.headers);
    if (this.cookies.size) {
      headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    }
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /expires=Thu, 01 Jan 1970/i.test(a)) || value === '';
      if (expired) this.cookies.delete(name); else this.cookies.set(name, value);
    }
    return res;
  }

  // Follows redirects until one leaves the IdP (to the portal callback) or a page is shown.
  async follow(url, issuer, init) {
    let res = await this.fetch(url, init);
    let location = url;
    while (res.status >= 300 && res.status < 400) {
      location = new URL(res.headers.get('location'), location).href;
      if (!location.startsWith(issuer)) {
        return { res, location };
      }
      res = await this.fetch(location);
    }
    return { res, location, body: await res.text() };
  }
}

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
}

function authorizeURL(issuer, { clientId = 'gantry', redirectUri = REDIRECT, challenge, state = 'st', nonce = 'n0' } = {}) {
  const u = new URL('/auth', issuer);
  u.search = new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    scope: 'openid profile email groups',
    redirect_uri: redirectUri,
    state,
    nonce,
    ...(challenge ? { code_challenge: challenge, code_challenge_method: 'S256' } : {}),
  }).toString();
  return u.href;
}

function decodeJWT(jwt) {
  const [h, p] = jwt.split('.');
  return {
    header: JSON.parse(Buffer.from(h, 'base64url').toString()),
    payload: JSON.parse(Buffer.from(p, 'base64url').toString()),
  };
}

describe('gantry dev IdP', () => {
  let child;
  let issuer;
  let output = '';

  before(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, ['server.mjs'], {
      cwd: new URL('.', import.meta.url),
      env: { ...process.env, IDP_PORT: String(port), IDP_ISSUER: issuer },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    for (let i = 0; i < 100; i += 1) {
      try {
        const res = await fetch(`${issuer}/healthz`);
        if (res.ok) return;
      } catch { /* not up yet */ }
      await new Promise((r) => { setTimeout(r, 100); });
    }
    throw new Error(`IdP did not become healthy:\n${output}`);
  });

  after(() => { child?.kill('SIGTERM'); });

  async function login(browser, user, password, opts = {}) {
    const { challenge, verifier } = pkce();
    const first = await browser.follow(authorizeURL(issuer, { challenge, ...opts }), issuer);
    assert.equal(first.res.status, 200, first.body);
    const action = /action="([^"]+)"/.exec(first.body)[1];
    const submitted = await browser.follow(new URL(action, issuer).href, issuer, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ login: user, password }).toString(),
    });
    return { ...submitted, verifier };
  }

  async function exchange(code, verifier, { clientId = 'gantry', secret = 'gantry-dev-secret', redirectUri = REDIRECT } = {}) {
    const res = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier }).toString(),
    });
    return { status: res.status, json: await res.json() };
  }

  it('serves discovery with PKCE S256 and an end-session endpoint', async () => {
    const res = await fetch(`${issuer}/.well-known/openid-configuration`);
    assert.equal(res.status, 200);
    const doc = await res.json();
    assert.equal(doc.issuer, issuer);
    assert.deepEqual(doc.code_challenge_methods_supported, ['S256']);
    assert.equal(doc.end_session_endpoint, `${issuer}/session/end`);
    assert.ok(doc.scopes_supported.includes('groups'));
  });

  const cases = {
    alice: { name: 'Alice Archer', groups: ['vision-researchers'] },
    bob: { name: 'Bob Baker', groups: ['vision-leads'] },
    erin: { name: 'Erin Evans', groups: ['gantry-admins'] },
    frank: { name: 'Frank Fischer', groups: [] },
  };
  for (const [user, want] of Object.entries(cases)) {
    it(`completes the code flow for ${user} with groups in a signed ID token`, async () => {
      const browser = new Browser();
      const { location, verifier } = await login(browser, user, 'gantry-dev', { state: `state-${user}`, nonce: `nonce-${user}` });
      const cb = new URL(location);
      assert.equal(`${cb.origin}${cb.pathname}`, REDIRECT);
      assert.equal(cb.searchParams.get('state'), `state-${user}`);
      const { status, json } = await exchange(cb.searchParams.get('code'), verifier);
      assert.equal(status, 200, JSON.stringify(json));
      const { header, payload } = decodeJWT(json.id_token);
      assert.equal(payload.iss, issuer);
      assert.equal(payload.aud, 'gantry');
      assert.equal(payload.nonce, `nonce-${user}`);
      assert.equal(payload.sub, user);
      assert.equal(payload.preferred_username, user);
      assert.equal(payload.name, want.name);
      assert.equal(payload.email, `${user}@gantry.local`);
      assert.deepEqual(payload.groups, want.groups);

      const jwks = await (await fetch(`${issuer}/jwks`)).json();
      const jwk = jwks.keys.find((k) => k.kid === header.kid);
      const [h, p, s] = json.id_token.split('.');
      const ok = verify('RSA-SHA256', Buffer.from(`${h}.${p}`), createPublicKey({ key: jwk, format: 'jwk' }), Buffer.from(s, 'base64url'));
      assert.ok(ok, 'ID token signature verifies against the JWKS');
    });
  }

  it('re-renders the login form with an error on a wrong password or unknown user', async () => {
    for (const [user, password] of [['alice', 'wrong'], ['mallory', 'gantry-dev']]) {
      const browser = new Browser();
      const { res, body } = await login(browser, user, password);
      assert.equal(res.status, 200);
      assert.match(body, /id="error"/);
      assert.match(body, /username or password is wrong/);
      assert.match(body, /id="login"/);
    }
  });

  it('requires PKCE', async () => {
    const browser = new Browser();
    const { location } = await browser.follow(authorizeURL(issuer, {}), issuer);
    const cb = new URL(location);
    assert.equal(cb.searchParams.get('error'), 'invalid_request');
    assert.match(cb.searchParams.get('error_description'), /PKCE/);
  });

  it('accepts any loopback callback port and rejects other redirect URIs', async () => {
    const allowed = ['http://127.0.0.1:1234/auth/callback', 'http://localhost:45678/auth/callback'];
    for (const redirectUri of allowed) {
      const { res } = await new Browser().follow(authorizeURL(issuer, { redirectUri, challenge: pkce().challenge }), issuer);
      assert.equal(res.status, 200, `${redirectUri} should reach the login form`);
    }
    const rejected = [
      'http://evil.example:1234/auth/callback',
      'https://127.0.0.1:1234/auth/callback',
      'http://127.0.0.1:1234/other',
      'http://127.0.0.1.evil.example/auth/callback',
    ];
    for (const redirectUri of rejected) {
      const { res, body } = await new Browser().follow(authorizeURL(issuer, { redirectUri, challenge: pkce().challenge }), issuer);
      assert.equal(res.status, 400, `${redirectUri} should be refused`);
      assert.match(body, /redirect_uri/);
    }
  });

  it('issues tokens to other-app with its own audience', async () => {
    const browser = new Browser();
    const { location, verifier } = await login(browser, 'carol', 'gantry-dev', { clientId: 'other-app' });
    const { status, json } = await exchange(new URL(location).searchParams.get('code'), verifier, { clientId: 'other-app', secret: 'other-app-secret' });
    assert.equal(status, 200);
    assert.equal(decodeJWT(json.id_token).payload.aud, 'other-app');
  });

  it('ends the IdP session on RP-initiated logout', async () => {
    const browser = new Browser();
    const { location, verifier } = await login(browser, 'dave', 'gantry-dev');
    const { json } = await exchange(new URL(location).searchParams.get('code'), verifier);

    // Signed in: a second authorization goes straight back to the portal.
    const again = await browser.follow(authorizeURL(issuer, { challenge: pkce().challenge }), issuer);
    assert.ok(again.location.startsWith(REDIRECT), 'still signed in before logout');

    const end = new URL('/session/end', issuer);
    end.search = new URLSearchParams({
      id_token_hint: json.id_token,
      post_logout_redirect_uri: 'http://127.0.0.1:38080/',
      state: 'bye',
    }).toString();
    const page = await browser.fetch(end.href);
    const html = await page.text();
    assert.equal(page.status, 200);
    assert.match(html, /name="logout" value="yes"/);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)[1];
    const action = /action="([^"]+)"/.exec(html)[1];
    const confirmed = await browser.fetch(new URL(action, issuer).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ xsrf, logout: 'yes' }).toString(),
    });
    assert.equal(confirmed.status, 303);
    assert.equal(confirmed.headers.get('location'), 'http://127.0.0.1:38080/?state=bye');

    const after = await browser.follow(authorizeURL(issuer, { challenge: pkce().challenge }), issuer);
    assert.equal(after.res.status, 200);
    assert.match(after.body, /id="login"/, 'login form shown again after logout');
  });

  it('refuses a non-loopback post-logout redirect', async () => {
    const end = new URL('/session/end', issuer);
    end.search = new URLSearchParams({ client_id: 'gantry', post_logout_redirect_uri: 'http://evil.example/' }).toString();
    const res = await fetch(end.href, { redirect: 'manual' });
    assert.equal(res.status, 400);
  });
});
