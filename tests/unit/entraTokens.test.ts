import fc from 'fast-check';
import { audienceForms, keyIssuerHolds, v1MetadataUrl, withTenant } from '../../lib/entraTokens';

const T = '11111111-2222-3333-4444-555555555555';
const OTHER = '99999999-8888-4777-8666-555555555555';

describe('v1MetadataUrl: the v1 document beside the v2 one, as Microsoft.Identity.Web derives it', () => {
  test.each([
    [`https://login.microsoftonline.com/${T}/v2.0/.well-known/openid-configuration`, `https://login.microsoftonline.com/${T}/.well-known/openid-configuration`],
    [`https://login.microsoftonline.us/${T}/v2.0/.well-known/openid-configuration`, `https://login.microsoftonline.us/${T}/.well-known/openid-configuration`],
    [`https://login.chinacloudapi.cn/${T}/v2.0/.well-known/openid-configuration`, `https://login.chinacloudapi.cn/${T}/.well-known/openid-configuration`],
    // a query (appid=…) is kept, as the v1 document is asked of the same application
    [
      `https://login.microsoftonline.com/${T}/v2.0/.well-known/openid-configuration?appid=x`,
      `https://login.microsoftonline.com/${T}/.well-known/openid-configuration?appid=x`,
    ],
    [`http://127.0.0.1:8080/cloud/${T}/v2.0/.well-known/openid-configuration`, `http://127.0.0.1:8080/cloud/${T}/.well-known/openid-configuration`],
  ])('%s → %s', (v2, v1) => {
    expect(v1MetadataUrl(v2)).toBe(v1);
  });

  test.each([
    // not Entra's v2 layout: no v1 document is assumed
    'http://127.0.0.1:8080/.well-known/openid-configuration',
    `https://login.microsoftonline.com/${T}/.well-known/openid-configuration`,
    `https://login.microsoftonline.com/${T}/v2.0/.well-known/openid-configuration/`,
    `https://login.microsoftonline.com/${T}/xv2.0/.well-known/openid-configuration`,
    'https://issuer.example/realms/x/.well-known/openid-configuration',
  ])('%s has none', (url) => {
    expect(v1MetadataUrl(url)).toBeUndefined();
  });
});

test('withTenant fills every {tenantid} and leaves other issuers alone', () => {
  expect(withTenant('https://login.microsoftonline.com/{tenantid}/v2.0', T)).toBe(`https://login.microsoftonline.com/${T}/v2.0`);
  expect(withTenant(`https://sts.windows.net/${T}/`, OTHER)).toBe(`https://sts.windows.net/${T}/`);
  expect(withTenant('{tenantid}/{tenantid}', T)).toBe(`${T}/${T}`);
});

describe('audienceForms: App ID URIs in both forms, application ids exactly', () => {
  test.each([
    [['6e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b'], ['6e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b']],
    [['api://draws'], ['api://draws', 'api://draws/']],
    [['api://draws/'], ['api://draws/', 'api://draws']],
    [['https://contoso.example/draws'], ['https://contoso.example/draws', 'https://contoso.example/draws/']],
    [
      ['api://draws', 'api://draws/'],
      ['api://draws', 'api://draws/'],
    ],
    [
      ['app-id', 'api://draws'],
      ['app-id', 'api://draws', 'api://draws/'],
    ],
  ])('%j → %j', (configured, forms) => {
    expect(audienceForms(configured)).toEqual(forms);
  });

  test('any configured audience stays accepted, and a form differs from it by at most one trailing slash', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.uuid(), fc.webUrl(), fc.string())), (configured) => {
        const forms = audienceForms(configured);
        expect(forms).toEqual(expect.arrayContaining(configured));
        for (const form of forms) {
          const bare = form.endsWith('/') ? form.slice(0, -1) : form;
          expect(configured.some((c) => c === form || (c.includes('://') && (c === bare || c === `${form}/` || c.slice(0, -1) === form)))).toBe(true);
        }
        expect(new Set(forms).size).toBe(forms.length);
      }),
    );
  });
});

describe('keyIssuerHolds (Microsoft.IdentityModel ValidateIssuerSigningKey)', () => {
  const v2 = (t: string) => `https://login.microsoftonline.com/${t}/v2.0`;
  const v1 = (t: string) => `https://sts.windows.net/${t}/`;
  const metadataIssuer = v2(T);
  const TEMPLATE = v2('{tenantid}');

  test.each([
    // [what, holds, key issuers, claims]
    ['a key without issuer', true, [undefined], { iss: v2(T), tid: T }],
    ['a blank issuer', true, ['  '], { iss: v2(T), tid: T }],
    ['the template, v2 token', true, [TEMPLATE], { iss: v2(T), tid: T }],
    ['the template, v1 token: held to the metadata issuer', true, [TEMPLATE], { iss: v1(T), tid: T }],
    ["the tenant's issuer, v2 token", true, [v2(T)], { iss: v2(T), tid: T }],
    ["the tenant's issuer, v1 token", true, [v2(T)], { iss: v1(T), tid: T }],
    ["another tenant's issuer", false, [v2(OTHER)], { iss: v2(T), tid: T }],
    ["another tenant's issuer, v1 token", false, [v2(OTHER)], { iss: v1(T), tid: T }],
    ["another cloud's template", false, ['https://login.partner.microsoftonline.cn/{tenantid}/v2.0'], { iss: v2(T), tid: T }],
    ["the template, another tenant's token with this tenant's issuer", false, [TEMPLATE], { iss: v2(T), tid: OTHER }],
    ["the template, another tenant's v2 token (not the metadata's)", true, [TEMPLATE], { iss: v2(OTHER), tid: OTHER }],
    ["the template, another tenant's v1 token", false, [TEMPLATE], { iss: v1(OTHER), tid: OTHER }],
    ['a token whose issuer does not name its tid', false, [undefined, TEMPLATE], { iss: 'https://issuer.example/', tid: T }],
    ['no tid, a key with an issuer', false, [TEMPLATE], { iss: v2(T) }],
    ['an empty tid', false, [TEMPLATE], { iss: v2(T), tid: '' }],
    ['no tid, a key without one', true, [undefined], { iss: v2(T) }],
    ['a tid that is not a string', false, [TEMPLATE], { iss: v2(T), tid: 7 }],
    ['no iss', false, [TEMPLATE], { tid: T }],
    ['an issuer that is not a string', false, [42], { iss: v2(T), tid: T }],
    ['an issuer that is null', false, [null], { iss: v2(T), tid: T }],
    ['two candidates, one of another tenant', false, [TEMPLATE, v2(OTHER)], { iss: v2(T), tid: T }],
    ['two candidates, both holding', true, [TEMPLATE, undefined], { iss: v2(T), tid: T }],
    ['no key (the set that verified has none of its kid): refused', false, [], { iss: v2(T), tid: T }],
  ] as const)('%s → %s', (_what, holds, keyIssuers, claims) => {
    expect(keyIssuerHolds(keyIssuers, claims, metadataIssuer)).toBe(holds);
  });

  test('a key naming an issuer holds only when that issuer, with tid filled in, is the token issuer or the metadata issuer', () => {
    const tenant = fc.constantFrom(T, OTHER, '');
    const issuer = fc.oneof(fc.constantFrom(TEMPLATE, v2(T), v2(OTHER), v1(T), v1(OTHER), metadataIssuer), fc.string());
    fc.assert(
      fc.property(
        issuer.filter((i) => i.trim() !== ''),
        issuer,
        tenant,
        (keyIssuer, iss, tid) => {
          const holds = keyIssuerHolds([keyIssuer], { iss, tid }, metadataIssuer);
          const effective = keyIssuer.replaceAll('{tenantid}', tid);
          expect(holds).toBe(tid !== '' && iss.includes(tid) && (effective === iss || effective === metadataIssuer));
        },
      ),
    );
  });
});
