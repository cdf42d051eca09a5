// A third-party OpenID Provider (panva/node-oidc-provider, pinned in package.json) for the
// interop tests of campusid.oidc_client. Not campusid code: it exists to prove that the client
// speaks standard OpenID Connect to a provider we did not write.
//
// Listens on 127.0.0.1 on a port chosen by the OS, then prints one JSON line {"issuer": ...}.
// Clients: one confidential web client (client_secret_basic) and one public native client with
// a loopback redirect (RFC 8252 section 7.3: any port). PKCE S256 is required for both.
// Interactions: a custom route logs in the fixed account "test-user" and grants the requested
// scopes without a password (no devInteractions).
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';

import Provider from 'oidc-provider';

const WEB_SECRET = process.env.OP_WEB_SECRET ?? 'web secret:+%/~&=';
const ACCOUNT_ID = 'test-user';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'op-rs256', alg: 'RS256', use: 'sig' };

const server = http.createServer();

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'web-client',
        client_secret: WEB_SECRET,
        token_endpoint_auth_method: 'client_secret_basic',
        application_type: 'web',
        redirect_uris: ['http://127.0.0.1:9/web/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
      {
        client_id: 'native-client',
        token_endpoint_auth_method: 'none',
        application_type: 'native',
        redirect_uris: ['http://127.0.0.1/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [signingKey] },
    cookies: { keys: ['interop-test-cookie-key-0123456789abcdef'] },
    pkce: { required: () => true },
    claims: { openid: ['sub'], profile: ['name'] },
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      userinfo: { enabled: true },
    },
    issueRefreshToken: async () => true,
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(ctx, sub) {
      return { accountId: sub, async claims() { return { sub, name: 'Test Student' }; } };
    },
  });
  provider.on('server_error', (ctx, err) => console.error('server_error', err));

  const opHandler = provider.callback();

  async function interaction(req, res) {
    const details = await provider.interactionDetails(req, res);
    const { prompt, params, session } = details;
    if (prompt.name === 'login') {
      await provider.interactionFinished(req, res, { login: { accountId: ACCOUNT_ID } }, { mergeWithLastSubmission: false });
      return;
    }
    if (prompt.name === 'consent') {
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      const missing = prompt.details;
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
        grant.addResourceScope(indicator, scopes.join(' '));
      }
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      return;
    }
    res.writeHead(400, { 'content-type': 'text/plain' });
    res.end(`unexpected prompt ${prompt.name}`);
  }

  server.on('request', (req, res) => {
    if (req.url.startsWith('/interaction/')) {
      interaction(req, res).catch((err) => {
        console.error('interaction failed', err);
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('interaction failed');
      });
      return;
    }
    opHandler(req, res);
  });

  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
