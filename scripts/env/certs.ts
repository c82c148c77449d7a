/**
 * The local apiserver's PKI, made with Debian's openssl (Node can read certificates but not issue
 * them): one CA signs the serving certificate and the admin client certificate
 * (CN=admin, O=system:masters); a separate key pair signs service-account tokens.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stateDir } from './paths.js';

/** The apiserver's own `kubernetes` Service: the first address of SERVICE_CLUSTER_IP_RANGE (components.ts). */
const KUBERNETES_SERVICE_IP = '127.200.0.1';

export const pkiDir = join(stateDir, 'pki');

export const pki = {
  caCert: join(pkiDir, 'ca.crt'),
  caKey: join(pkiDir, 'ca.key'),
  serverCert: join(pkiDir, 'apiserver.crt'),
  serverKey: join(pkiDir, 'apiserver.key'),
  adminCert: join(pkiDir, 'admin.crt'),
  adminKey: join(pkiDir, 'admin.key'),
  saKey: join(pkiDir, 'sa.key'),
  saPub: join(pkiDir, 'sa.pub'),
};

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? String(err);
    throw new Error(`openssl ${args[0]} failed (is Debian's openssl installed?): ${stderr}`);
  }
}

const DAYS = '3650';
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function issue(name: string, subject: string, extensions: string, cert: string, key: string): void {
  const csr = join(pkiDir, `${name}.csr`);
  const ext = join(pkiDir, `${name}.ext`);
  writeFileSync(ext, extensions);
  openssl(['req', ...EC, '-keyout', key, '-out', csr, '-subj', subject]);
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    pki.caCert,
    '-CAkey',
    pki.caKey,
    '-CAcreateserial',
    '-out',
    cert,
    '-days',
    DAYS,
    '-extfile',
    ext,
  ]);
}

/** Creates whatever of the PKI is missing; an existing PKI is kept, so clients stay valid. */
export function ensurePki(): void {
  mkdirSync(pkiDir, { recursive: true, mode: 0o700 });
  if (!existsSync(pki.caCert)) {
    openssl([
      'req',
      '-x509',
      ...EC,
      '-keyout',
      pki.caKey,
      '-out',
      pki.caCert,
      '-days',
      DAYS,
      '-subj',
      '/CN=konfidence-local-ca',
    ]);
  }
  if (!existsSync(pki.serverCert)) {
    issue(
      'apiserver',
      '/CN=kube-apiserver',
      `subjectAltName=DNS:localhost,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:${KUBERNETES_SERVICE_IP}\n` +
        'extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n',
      pki.serverCert,
      pki.serverKey,
    );
  }
  if (!existsSync(pki.adminCert)) {
    issue(
      'admin',
      '/O=system:masters/CN=admin',
      'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n',
      pki.adminCert,
      pki.adminKey,
    );
  }
  if (!existsSync(pki.saPub)) {
    openssl(['genrsa', '-out', pki.saKey, '2048']);
    openssl(['rsa', '-in', pki.saKey, '-pubout', '-out', pki.saPub]);
  }
}
