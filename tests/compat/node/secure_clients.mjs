// KafkaJS over TLS and SASL: produce, consume in a group and commit, and (unless "txnTopic" is
// null) a transaction aborted then one committed, read back by a read_committed consumer.
//
//   node secure_clients.mjs '{"brokers": ["127.0.0.1:PORT"], "ssl": {"ca": PATH, "cert": PATH,
//       "key": PATH} | null, "sasl": {"mechanism": "plain"|"scram-sha-256"|"scram-sha-512",
//       "username", "password"} | {"mechanism": "oauthbearer", "token"} | null, "topic", "group",
//       "values": [...], "txnTopic", "txnId", "aborted": [...], "committed": [...]}'
//
// Prints one JSON object: {"offsets": the produced records' offsets, "consumed": the values the
// group consumer read, "committed": the group's committed offset as fetchOffsets reports it,
// "txn": [[offset, value], ...] read with read_committed}. KafkaJS's own log goes to stderr.
import fs from 'node:fs'
import { Kafka, logLevel } from 'kafkajs'

const cfg = JSON.parse(process.argv[2])
const log = () => ({ namespace, level, label, log }) =>
  process.stderr.write(`${label} [${namespace}] ${log.message} ${JSON.stringify(log)}\n`)

let ssl = false
if (cfg.ssl) {
  ssl = { ca: [fs.readFileSync(cfg.ssl.ca, 'utf8')] }
  if (cfg.ssl.cert) {
    ssl.cert = fs.readFileSync(cfg.ssl.cert, 'utf8')
    ssl.key = fs.readFileSync(cfg.ssl.key, 'utf8')
  }
}
let sasl
if (cfg.sasl && cfg.sasl.mechanism === 'oauthbearer') {
  sasl = { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: cfg.sasl.token }) }
} else if (cfg.sasl) {
  sasl = cfg.sasl
}
const kafka = new Kafka({
  clientId: 'minibroker-secure', brokers: cfg.brokers, ssl, sasl, connectionTimeout: 5000,
  authenticationTimeout: 5000, requestTimeout: 10000, retry: { retries: 3, initialRetryTime: 100 },
  logLevel: logLevel.WARN, logCreator: log
})

// Consume with `consumer` from the beginning of `topic` until `n` messages, then stop.
async function take (consumer, topic, n, timeoutMs = 20000) {
  const got = []
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`got ${got.length} of ${n} messages from ${topic}`)), timeoutMs)
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        got.push([Number(message.offset), message.value.toString()])
        if (got.length >= n) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  return got
}

const out = {}
const admin = kafka.admin()
const producer = kafka.producer()
await admin.connect()
await producer.connect()
try {
  const sent = await producer.send({ topic: cfg.topic, acks: -1, messages: cfg.values.map(v => ({ value: v })) })
  const base = Number(sent[0].baseOffset)
  out.offsets = cfg.values.map((_, i) => base + i)

  const consumer = kafka.consumer({ groupId: cfg.group, maxWaitTimeInMs: 100, sessionTimeout: 10000,
    heartbeatInterval: 1000, rebalanceTimeout: 10000 })
  await consumer.connect()
  try {
    const got = await take(consumer, cfg.topic, cfg.values.length)
    out.consumed = got.map(([, v]) => v)
    await consumer.commitOffsets([{ topic: cfg.topic, partition: 0, offset: String(got[got.length - 1][0] + 1) }])
  } finally {
    await consumer.disconnect()
  }
  const fetched = await admin.fetchOffsets({ groupId: cfg.group, topics: [cfg.topic] })
  out.committed = Number(fetched[0].partitions.find(p => p.partition === 0).offset)

  if (cfg.txnTopic) {
    const txp = kafka.producer({ transactionalId: cfg.txnId, idempotent: true, maxInFlightRequests: 1,
      transactionTimeout: 30000 })
    await txp.connect()
    try {
      let txn = await txp.transaction()
      await txn.send({ topic: cfg.txnTopic, messages: cfg.aborted.map(v => ({ value: v })) })
      await txn.abort()
      txn = await txp.transaction()
      await txn.send({ topic: cfg.txnTopic, messages: cfg.committed.map(v => ({ value: v })) })
      await txn.commit()
    } finally {
      await txp.disconnect()
    }
    // readUncommitted: false is KafkaJS's default: FetchRequest isolation_level 1 (read_committed)
    const reader = kafka.consumer({ groupId: `${cfg.group}-rc`, readUncommitted: false, maxWaitTimeInMs: 100,
      sessionTimeout: 10000, heartbeatInterval: 1000, rebalanceTimeout: 10000 })
    await reader.connect()
    try {
      out.txn = await take(reader, cfg.txnTopic, cfg.committed.length)
    } finally {
      await reader.disconnect()
    }
  }
} finally {
  await producer.disconnect()
  await admin.disconnect()
}
process.stdout.write(JSON.stringify(out))
