// Development OpenID Connect provider for Gantry's local stack and tests.
//
// Built on the certified `oidc-provider` package: all protocol code (discovery, authorization code
// flow with PKCE, tokens, JWKS, RP-initiated logout) is the library's. This file only adds what a
// company IdP would: an account store (users.json), a login form that checks passwords, automatic
// consent for first-party clients and loopback-only redirect rules. Never run this in production:
// keys, sessions and grants live in memory and every password is "gantry-dev".

import { generateKeyPairSync, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';

import Provider, { errors } from 'oidc-provider';

const PORT = Number.parseInt(process.env.IDP_PORT ?? '5556', 10);
const HOST = process.env.IDP_HOST ?? '127.0.0.1';
const ISSUER = process.env.IDP_ISSUER ?? `http://127.0.0.1:${PORT}`;
const PASSWORD = 'gantry-dev';
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost']);
const FIRST_PARTY_CLIENTS = new Set(['gantry', 'other-app']);

// Each user signs in with `login` (default: their username) and is the account `sub` (default: their
// username); `username` is the preferred_username claim, which two accounts may share, as at a real IdP.
// IDP_EXTRA_USERS names a JSON file of more accounts in the same shape (a test's own IdP: the soak run's 200 users).
const seeded = [
  ...JSON.parse(readFileSync(new URL('./users.json', import.meta.url), 'utf8')),
  ...(process.env.IDP_EXTRA_USERS ? JSON.parse(readFileSync(process.env.IDP_EXTRA_USERS, 'utf8')) : []),
];
const users = new Map(seeded.map((user) => [user.login ?? user.username, user]));
const accounts = new Map(seeded.map((user) => [user.sub ?? user.username, user]));

function log(message) {
  process.stdout.write(`${new Date().toISOString()} ${message}\n`);
}

function htmlEscape(value) {
  return String(value ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function passwordMatches(given) {
  const a = Buffer.from(String(given ?? ''));
  const b = Buffer.from(PASSWORD);
  return a.length === b.length && timingSafeEqual(a, b);
}

// A fresh signing key per start: a restarted IdP invalidates old tokens, which is what a dev stack wants.
// Its start is logged in steps, so a slow start on a busy machine says where the time went.
function signingKeys() {
  log(`modules loaded ${process.uptime().toFixed(1)} s after the process started`);
  const started = Date.now();
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  log(`signing key generated in ${Date.now() - started} ms`);
  return {
    keys: [{ ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' }],
  };
}

function parseLoopback(uri) {
  let url;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' || !LOOPBACK_HOSTS.has(url.hostname) || url.username || url.password) {
    return undefined;
  }
  return url;
}

// Any loopback port may host a portal (tests start them on free ports), but only on /auth/callback.
function loopbackCallbackAllowed(uri) {
  const url = parseLoopback(uri);
  return url !== undefined && url.pathname === '/auth/callback' && url.search === '' && url.hash === '';
}

function loopbackPostLogoutAllowed(uri) {
  const url = parseLoopback(uri);
  return url !== undefined && url.hash === '';
}

function page(title, body) {
  return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${htmlEscape(title)} · Gantry dev IdP</title>
  <style>
    body{font-family:system-ui,sans-serif;background:#f4f5f7;color:#1b1f24;margin:0;padding:2rem 1rem}
    main{max-width:22rem;margin:0 auto;background:#fff;border-radius:8px;padding:1.5rem;box-shadow:0 1px 3px rgba(0,0,0,.2)}
    h1{font-size:1.3rem;margin-top:0}
    label{display:block;margin:.8rem 0 .2rem;font-weight:600}
    input{width:100%;box-sizing:border-box;padding:.5rem;font-size:1rem;border:1px solid #8a939e;border-radius:4px}
    button{margin-top:1.2rem;width:100%;padding:.6rem;font-size:1rem;font-weight:600;color:#fff;background:#1f5fbf;border:0;border-radius:4px;cursor:pointer}
    button:focus,input:focus{outline:3px solid #f0b400;outline-offset:1px}
    .error{background:#fde7e9;color:#8a1020;border-radius:4px;padding:.6rem;margin-bottom:.5rem}
    .hint{color:#4a525c;font-size:.9rem}
  </style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

function loginPage({ uid, clientId, login, error }) {
  const message = error ? `<p class="error" id="error" role="alert">${htmlEscape(error)}</p>` : '';
  return page('Sign in', `
  <h1>Sign in to ${htmlEscape(clientId)}</h1>
  ${message}
  <form method="post" action="/interaction/${htmlEscape(uid)}/login">
    <label for="login">Username</label>
    <input id="login" name="login" type="text" autocomplete="username" required autofocus value="${htmlEscape(login)}">
    <label for="password">Password</label>
    <input id="password" name="password" type="password" autocomplete="current-password" required>
    <button id="submit" type="submit">Sign in</button>
  </form>
  <p class="hint">Development identity provider. Users: ${[...users.keys()].map(htmlEscape).join(', ')}.</p>`);
}

async function findAccount(_ctx, sub) {
  const user = accounts.get(sub);
  if (!user) {
    return undefined;
  }
  return {
    accountId: sub,
    async claims() {
      return {
        sub,
        name: user.name,
        preferred_username: user.username,
        email: user.email,
        email_verified: true,
        groups: user.groups,
      };
    },
  };
}

async function logoutSource(ctx, form) {
  // Ends the IdP session in one go: the portal already asked the user, so no second question here.
  const autoForm = form.replace('</form>', '<input type="hidden" name="logout" value="yes"/></form>');
  ctx.body = page('Signing out', `
  <h1>Signing out…</h1>
  ${autoForm}
  <noscript><button id="logout-confirm" type="submit" form="op.logoutForm">Sign out</button></noscript>
  <script>document.getElementById('op.logoutForm').submit();</script>`);
}

async function postLogoutSuccessSource(ctx) {
  ctx.body = page('Signed out', '<h1 id="signed-out">You are signed out.</h1>');
}

async function renderError(ctx, out) {
  ctx.type = 'html';
  const details = Object.entries(out)
    .map(([key, value]) => `<p><strong>${htmlEscape(key)}</strong>: ${htmlEscape(value)}</p>`)
    .join('');
  ctx.body = page('Error', `<h1 id="error-page">Something went wrong</h1>${details}`);
}

const configuration = {
  clients: [
    {
      client_id: 'gantry',
      client_secret: 'gantry-dev-secret',
      client_name: 'Gantry',
      redirect_uris: ['http://127.0.0.1:8080/auth/callback', 'http://localhost:8080/auth/callback'],
      post_logout_redirect_uris: ['http://127.0.0.1:8080/'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    {
      client_id: 'other-app',
      client_secret: 'other-app-secret',
      client_name: 'Other App',
      redirect_uris: ['http://127.0.0.1:8080/auth/callback', 'http://localhost:8080/auth/callback'],
      post_logout_redirect_uris: ['http://127.0.0.1:8080/'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
  responseTypes: ['code'],
  pkce: { required: () => true },
  scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
  claims: {
    openid: ['sub'],
    profile: ['name', 'preferred_username'],
    email: ['email', 'email_verified'],
    groups: ['groups'],
  },
  // Put the scope's claims in the ID token itself: the portal reads groups from it, not /userinfo.
  conformIdTokenClaims: false,
  findAccount,
  jwks: signingKeys(),
  cookies: {
    keys: [randomBytes(32).toString('base64url')],
    // The portal shares the 127.0.0.1 cookie jar (cookies ignore ports): keep our names distinct.
    names: { session: 'gantry_idp_session', interaction: 'gantry_idp_interaction', resume: 'gantry_idp_resume' },
  },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: { enabled: true, logoutSource, postLogoutSuccessSource },
    revocation: { enabled: true },
    userinfo: { enabled: true },
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  renderError,
  ttl: {
    AccessToken: 3600,
    AuthorizationCode: 60,
    IdToken: 3600,
    Interaction: 3600,
    Grant: 14 * 24 * 3600,
    Session: 14 * 24 * 3600,
    RefreshToken: 24 * 3600,
  },
};

const provider = new Provider(ISSUER, configuration);

provider.Client.prototype.redirectUriAllowed = function redirectUriAllowed(value) {
  return this.redirectUris.includes(value) || loopbackCallbackAllowed(value);
};

provider.Client.prototype.postLogoutRedirectUriAllowed = function postLogoutRedirectUriAllowed(value) {
  return this.postLogoutRedirectUris.includes(value) || loopbackPostLogoutAllowed(value);
};

async function readForm(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > 64 * 1024) {
      throw new Error('form body too large');
    }
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

async function grantConsent(details) {
  const { prompt: { details: missing }, params, session } = details;
  let grant;
  if (details.grantId) {
    grant = await provider.Grant.find(details.grantId);
  } else {
    grant = new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  }
  if (missing.missingOIDCScope) {
    grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  }
  if (missing.missingOIDCClaims) {
    grant.addOIDCClaims(missing.missingOIDCClaims);
  }
  if (missing.missingResourceScopes) {
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes)) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
  }
  return grant.save();
}

async function finish(ctx, result, mergeWithLastSubmission = true) {
  const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission });
  ctx.status = 303;
  ctx.redirect(returnTo);
}

async function showInteraction(ctx, uid) {
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (details.uid !== uid) {
    throw new errors.SessionNotFound('interaction does not match this browser');
  }
  const { prompt, params } = details;
  if (prompt.name === 'login') {
    ctx.type = 'html';
    ctx.body = loginPage({ uid, clientId: params.client_id, login: params.login_hint });
    return;
  }
  if (prompt.name === 'consent' && FIRST_PARTY_CLIENTS.has(params.client_id)) {
    const grantId = await grantConsent(details);
    await finish(ctx, { consent: { grantId } });
    return;
  }
  await finish(ctx, { error: 'access_denied', error_description: `prompt ${prompt.name} is not supported` });
}

async function submitLogin(ctx, uid) {
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (details.uid !== uid || details.prompt.name !== 'login') {
    throw new errors.SessionNotFound('no login in progress for this browser');
  }
  const form = await readForm(ctx.req);
  const login = (form.get('login') ?? '').trim();
  const user = users.get(login);
  if (!user || !passwordMatches(form.get('password'))) {
    log(`login failed for ${JSON.stringify(login)}`);
    ctx.status = 200;
    ctx.type = 'html';
    ctx.body = loginPage({
      uid,
      clientId: details.params.client_id,
      login,
      error: 'The username or password is wrong. Every dev user has the password gantry-dev.',
    });
    return;
  }
  log(`login succeeded for ${login}`);
  await finish(ctx, { login: { accountId: user.sub ?? user.username } }, false);
}

provider.use(async (ctx, next) => {
  const started = process.hrtime.bigint();
  try {
    await next();
  } finally {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    log(`${ctx.method} ${ctx.path} ${ctx.status} ${ms.toFixed(1)}ms`);
  }
});

provider.use(async (ctx, next) => {
  if (ctx.path === '/healthz') {
    ctx.type = 'text';
    ctx.body = 'ok\n';
    return;
  }
  if (ctx.path === '/favicon.ico') {
    ctx.status = 204;
    return;
  }
  const match = /^\/interaction\/([^/]+)(\/login)?$/.exec(ctx.path);
  if (!match) {
    await next();
    return;
  }
  ctx.set('cache-control', 'no-store');
  const [, uid, loginSuffix] = match;
  try {
    if (!loginSuffix && ctx.method === 'GET') {
      await showInteraction(ctx, uid);
    } else if (loginSuffix && ctx.method === 'POST') {
      await submitLogin(ctx, uid);
    } else {
      ctx.status = 405;
    }
  } catch (err) {
    if (err instanceof errors.SessionNotFound) {
      ctx.status = 400;
      await renderError(ctx, {
        error: 'session_not_found',
        error_description: 'This sign-in attempt expired or belongs to another browser. Go back to the portal and start again.',
      });
      return;
    }
    throw err;
  }
});

provider.on('server_error', (_ctx, err) => log(`server error: ${err.stack ?? err}`));

const server = provider.listen(PORT, HOST, () => {
  log(`gantry dev IdP listening on http://${HOST}:${PORT} with issuer ${ISSUER} (${process.uptime().toFixed(1)} s after the process started)`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    log(`received ${signal}, shutting down`);
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
