// phi's sandbox launcher: a real local AT Protocol network (PLC, PDS, AppView) built with
// the official @atproto/dev-env, plus the cast of accounts phi's tests and people talk to.
//
// Besides dev-env's network, two things the network's own PDS cannot show: a second PDS
// ("elsewhere", handles `*.elsewhere`) that the AppView also follows, for accounts that live
// anywhere else, and a feed generator with one feed ("cast-latest", made by the operator).
//
// Started and stopped by `phi.atproto.sandbox` (Python); every setting arrives as a
// PHI_SANDBOX_* environment variable. When the network is up it writes the cast file (URLs,
// handles, DIDs, passwords, app passwords) and serves a loopback-only hook:
//   GET  /health       -> {"ok": true}
//   POST /process-all  -> waits until the AppView has indexed every write (network.processAll)
//   POST /shutdown     -> closes the network and exits
import fs from 'node:fs/promises'
import http from 'node:http'

import { RepoSubscription, TestNetwork, TestPds } from '@atproto/dev-env'
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

const ELSEWHERE_DOMAIN = '.elsewhere'
const FEED_RKEY = 'cast-latest'

// A second PDS with its own handle domain. dev-env mocks handle resolution for its own PDS
// only (`mockNetworkUtilities`); the resolvers learn to ask this one for `*.elsewhere`, as
// DNS or https://<handle>/.well-known/atproto-did would on the real network.
async function startElsewhere(network) {
  const elsewhere = await TestPds.create({
    didPlcUrl: network.plc.url,
    hostname: 'localhost',
    serviceHandleDomains: [ELSEWHERE_DOMAIN],
    bskyAppViewUrl: network.bsky.url,
    bskyAppViewDid: network.bsky.ctx.cfg.serverDid,
  })
  const resolvers = [
    network.pds.ctx.idResolver,
    network.bsky.ctx.idResolver,
    network.bsky.dataplane.idResolver,
    elsewhere.ctx.idResolver,
  ]
  for (const resolver of resolvers) {
    const resolve = resolver.handle.resolve.bind(resolver.handle)
    resolver.handle.resolve = async (handle) => {
      if (!handle.endsWith(ELSEWHERE_DOMAIN)) return resolve(handle)
      const account = await elsewhere.ctx.accountManager.getAccount(handle)
      return account?.did ?? undefined
    }
  }
  // The AppView follows both PDSes, as the real one follows a relay.
  const sub = new RepoSubscription({
    service: `ws://localhost:${elsewhere.port}`,
    db: network.bsky.db,
    idResolver: network.bsky.dataplane.idResolver,
  })
  void sub.start()
  return { pds: elsewhere, sub }
}

// The cast's newest top-level posts, newest first: a skeleton built from the repos
// themselves, so it needs no index of its own.
function castLatestFeed(pdsFor, accounts) {
  return async ({ params }) => {
    const limit = Math.min(params.limit ?? 30, 100)
    const posts = []
    for (const account of Object.values(accounts)) {
      const agent = pdsFor(account.name).getAgent()
      const res = await agent.com.atproto.repo.listRecords({
        repo: account.did,
        collection: 'app.bsky.feed.post',
        limit,
      })
      for (const record of res.data.records) {
        if (!record.value.reply) posts.push({ uri: record.uri, at: record.value.createdAt })
      }
    }
    posts.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0))
    return {
      encoding: 'application/json',
      body: { feed: posts.slice(0, limit).map((p) => ({ post: p.uri })) },
    }
  }
}

async function createFeeds(network, pdsFor, accounts, agents) {
  const owner = accounts.operator
  if (!owner) return {}
  const uri = `at://${owner.did}/app.bsky.feed.generator/${FEED_RKEY}`
  const generator = await network.createFeedGen({ [uri]: castLatestFeed(pdsFor, accounts) })
  await agents.operator.com.atproto.repo.putRecord({
    repo: owner.did,
    collection: 'app.bsky.feed.generator',
    rkey: FEED_RKEY,
    record: {
      $type: 'app.bsky.feed.generator',
      did: generator.did,
      displayName: 'Cast, latest',
      description: "the sandbox cast's newest posts",
      createdAt: new Date().toISOString(),
    },
  })
  return { [FEED_RKEY]: uri }
}

async function createCast(pdsFor) {
  const accounts = {}
  const agents = {}
  for (const member of cfg.cast) {
    const pds = pdsFor(member.name)
    const agent = pds.getAgent()
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
      pds_url: member.pds === 'elsewhere' ? pds.url : null,
    }
    agents[member.name] = agent
  }
  return { accounts, agents }
}

function serveHook(processAll, shutdown) {
  const server = http.createServer(async (req, res) => {
    const reply = (status, body) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    try {
      if (req.method === 'GET' && req.url === '/health') return reply(200, { ok: true })
      if (req.method === 'POST' && req.url === '/process-all') {
        await processAll()
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
  const elsewhere = await startElsewhere(network)
  const processAll = async () => {
    await network.processAll()
    await elsewhere.pds.processAll()
    // As dev-env's processFullSubscription does for its own PDS: the subscription may
    // call itself done before the PDS's last event has even reached it.
    const last = await elsewhere.pds.ctx.sequencer.curr()
    const deadline = Date.now() + 10_000
    while (Date.now() < deadline) {
      await elsewhere.sub.processAll()
      const cursor = await elsewhere.sub.getCursor()
      if (!last || (cursor && cursor >= last)) return
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    throw new Error('the second PDS was not indexed within 10 s')
  }
  let closing = false
  const shutdown = async (why) => {
    if (closing) return
    closing = true
    log(`shutting down (${why})`)
    const timer = setTimeout(() => process.exit(1), 15_000)
    try {
      await elsewhere.sub.destroy()
      await elsewhere.pds.close()
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
  const byName = Object.fromEntries(cfg.cast.map((m) => [m.name, m.pds]))
  const pdsFor = (name) => (byName[name] === 'elsewhere' ? elsewhere.pds : network.pds)
  const { accounts, agents } = await createCast(pdsFor)
  const feeds = await createFeeds(network, pdsFor, accounts, agents)
  await processAll()
  const info = {
    plc_url: network.plc.url,
    pds_url: network.pds.url,
    appview_url: network.bsky.url,
    hook_url: `http://127.0.0.1:${cfg.hookPort}`,
    pid: process.pid,
    accounts,
    feeds,
  }
  await serveHook(processAll, shutdown)
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
