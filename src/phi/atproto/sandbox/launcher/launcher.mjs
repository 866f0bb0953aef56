// phi's sandbox launcher: a real local AT Protocol network (PLC, PDS, AppView) built with
// the official @atproto/dev-env, plus the cast of accounts phi's tests and people talk to.
//
// Started and stopped by `phi.atproto.sandbox` (Python); every setting arrives as a
// PHI_SANDBOX_* environment variable. When the network is up it writes the cast file (URLs,
// handles, DIDs, passwords, app passwords) and serves a loopback-only hook:
//   GET  /health       -> {"ok": true}
//   POST /process-all  -> waits until the AppView has indexed every write (network.processAll)
//   POST /shutdown     -> closes the network and exits
import fs from 'node:fs/promises'
import http from 'node:http'

import { TestNetwork } from '@atproto/dev-env'
import pg from 'pg'

const env = (name) => {
  const value = process.env[name]
  if (!value) throw new Error(`missing environment variable ${name}`)
  return value
}

const cfg = {
  pgUrl: env('PHI_SANDBOX_POSTGRES_URL'),
  schema: env('PHI_SANDBOX_SCHEMA'),
  plcPort: Number(env('PHI_SANDBOX_PLC_PORT')),
  pdsPort: Number(env('PHI_SANDBOX_PDS_PORT')),
  appviewPort: Number(env('PHI_SANDBOX_APPVIEW_PORT')),
  hookPort: Number(env('PHI_SANDBOX_HOOK_PORT')),
  castFile: env('PHI_SANDBOX_CAST_FILE'),
  cast: JSON.parse(env('PHI_SANDBOX_CAST')),
}

const log = (...args) => console.log(new Date().toISOString(), ...args)

// Each start is a fresh network: the PLC directory lives in memory, so rows the AppView
// kept from an earlier start would point at DIDs that no longer exist.
async function dropSchemas() {
  const client = new pg.Client({ connectionString: cfg.pgUrl })
  await client.connect()
  try {
    for (const prefix of ['appview', 'bsync', 'ozone']) {
      await client.query(`DROP SCHEMA IF EXISTS "${prefix}_${cfg.schema}" CASCADE`)
    }
  } finally {
    await client.end()
  }
}

async function createCast(network) {
  const accounts = {}
  for (const member of cfg.cast) {
    const agent = network.pds.getAgent()
    const handle = member.handle
    const res = await agent.createAccount({
      handle,
      email: `${member.name}@sandbox.test`,
      password: member.password,
    })
    const appPassword = await agent.com.atproto.server.createAppPassword({ name: 'phi-sandbox' })
    await agent.com.atproto.repo.putRecord({
      repo: res.data.did,
      collection: 'app.bsky.actor.profile',
      rkey: 'self',
      record: {
        $type: 'app.bsky.actor.profile',
        displayName: member.displayName,
        description: member.description,
      },
    })
    accounts[member.name] = {
      name: member.name,
      handle,
      did: res.data.did,
      password: member.password,
      app_password: appPassword.data.password,
    }
  }
  return accounts
}

function serveHook(network, shutdown) {
  const server = http.createServer(async (req, res) => {
    const reply = (status, body) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    try {
      if (req.method === 'GET' && req.url === '/health') return reply(200, { ok: true })
      if (req.method === 'POST' && req.url === '/process-all') {
        await network.processAll()
        return reply(200, { ok: true })
      }
      if (req.method === 'POST' && req.url === '/shutdown') {
        reply(200, { ok: true })
        return void shutdown('hook')
      }
      return reply(404, { error: 'NotFound', message: `no route ${req.method} ${req.url}` })
    } catch (err) {
      log('hook error', err)
      return reply(500, { error: 'InternalError', message: String(err) })
    }
  })
  return new Promise((resolve) => server.listen(cfg.hookPort, '127.0.0.1', () => resolve(server)))
}

async function main() {
  log('dropping old sandbox schemas')
  await dropSchemas()
  log('starting network')
  const network = await TestNetwork.create({
    dbPostgresUrl: cfg.pgUrl,
    dbPostgresSchema: cfg.schema,
    plc: { port: cfg.plcPort },
    pds: { port: cfg.pdsPort, hostname: 'localhost', enableDidDocWithSession: true },
    bsky: { port: cfg.appviewPort, publicUrl: `http://localhost:${cfg.appviewPort}` },
  })
  let closing = false
  const shutdown = async (why) => {
    if (closing) return
    closing = true
    log(`shutting down (${why})`)
    const timer = setTimeout(() => process.exit(1), 15_000)
    try {
      await network.close()
    } catch (err) {
      log('close error', err)
    }
    clearTimeout(timer)
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))

  log('creating cast')
  const accounts = await createCast(network)
  await network.processAll()
  const info = {
    plc_url: network.plc.url,
    pds_url: network.pds.url,
    appview_url: network.bsky.url,
    hook_url: `http://127.0.0.1:${cfg.hookPort}`,
    pid: process.pid,
    accounts,
  }
  await serveHook(network, shutdown)
  // Written last and renamed into place: its presence means the network is ready.
  const tmp = `${cfg.castFile}.tmp`
  await fs.writeFile(tmp, JSON.stringify(info, null, 2), { mode: 0o600 })
  await fs.rename(tmp, cfg.castFile)
  log('ready', JSON.stringify({ pds: info.pds_url, appview: info.appview_url }))
}

main().catch((err) => {
  log('launcher failed', err)
  process.exit(1)
})
