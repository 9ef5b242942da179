/**
 * What an app-only token request carries and what Microsoft Entra ID issues for it, shared by the
 * tests' plain provider (oidcProvider.ts) and `npm start`'s Entra stand-in (localEntra.ts).
 */

/** The token's audience, tenant and app roles. */
export interface AppTokenClaims {
  /** `aud` of issued tokens. */
  readonly audience: string;
  /** `tid`, when given. */
  readonly tenantId?: string;
  /** App roles put in `roles`. */
  readonly roles?: readonly string[];
}

/** The claims of a Microsoft Entra v2 client-credentials access token for `clientId`, beyond iss, iat, exp and nbf. */
export function appOnlyClaims(clientId: string | undefined, options: AppTokenClaims): Record<string, unknown> {
  return {
    aud: options.audience,
    sub: clientId,
    azp: clientId,
    idtyp: 'app',
    ver: '2.0',
    ...(options.tenantId === undefined ? {} : { tid: options.tenantId }),
    ...(options.roles === undefined ? {} : { roles: [...options.roles] }),
  };
}

/** A token request's fields: the form, with HTTP Basic credentials (client_secret_basic) over the form's. */
export function tokenRequestFields(form: URLSearchParams, authorization: string | undefined): Map<string, string> {
  const fields = new Map(form.entries());
  const basic = /^Basic ([A-Za-z0-9+/=]{1,4096})$/i.exec(authorization ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString();
    const colon = decoded.indexOf(':');
    if (colon > 0) {
      // RFC 6749 §2.3.1: both are form-encoded. A malformed escape is a credential that cannot match.
      const decode = (text: string) => {
        try {
          return decodeURIComponent(text.replaceAll('+', ' '));
        } catch {
          return undefined;
        }
      };
      const id = decode(decoded.slice(0, colon));
      const secret = decode(decoded.slice(colon + 1));
      if (id !== undefined) fields.set('client_id', id);
      fields.set('client_secret', secret ?? '\u0000malformed');
    }
  }
  return fields;
}
