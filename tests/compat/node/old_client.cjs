// kafka-node 5 (a client of the Kafka 0.9-0.10 era: Produce v0-2 with magic 0/1 messages,
// Fetch v0-2, the group APIs at v0) produces N messages to partition 0 of TOPIC, then a
// ConsumerGroup of GROUP reads them back from the earliest offset and commits.
//
//   node old_client.cjs HOST:PORT TOPIC GROUP N CODEC     (CODEC: 0 none, 1 gzip, 2 snappy)
//
// Prints one JSON object: {"produced": {partition: first offset}, "consumed": [[offset, key,
// value], ...], "committed": offset}, or {"error": message}. Message i has key "k<i>" and value
// "value-<i>" repeated 20 times.
'use strict'
const kafka = require('kafka-node')

const [bootstrap, topic, groupId, count, codec] = process.argv.slice(2)
const n = Number(count)
const why = (e) => (e && (e.message || e.name)) || String(e)
const done = (out) => {
  process.stdout.write(JSON.stringify(out))
  process.exit(out.error ? 1 : 0)
}
setTimeout(() => done({ error: 'timed out' }), 60000).unref()

const client = new kafka.KafkaClient({ kafkaHost: bootstrap, requestTimeout: 10000, connectTimeout: 10000 })
const producer = new kafka.Producer(client, { requireAcks: 1, partitionerType: 0 })
producer.on('error', (e) => done({ error: 'producer: ' + why(e) }))
producer.on('ready', () => {
  const messages = []
  for (let i = 0; i < n; i++) messages.push(new kafka.KeyedMessage('k' + i, ('value-' + i).repeat(20)))
  producer.send([{ topic, partition: 0, messages, attributes: Number(codec) }], (err, produced) => {
    if (err) return done({ error: 'send: ' + why(err) })
    producer.close(() => consume(produced[topic]))
  })
})

function consume (produced) {
  const consumed = []
  const group = new kafka.ConsumerGroup({
    kafkaHost: bootstrap, groupId, fromOffset: 'earliest', autoCommit: false, sessionTimeout: 10000,
    protocol: ['roundrobin'], fetchMaxWaitMs: 100, requestTimeout: 10000
  }, [topic])
  group.on('error', (e) => done({ error: 'consumer group: ' + why(e) }))
  group.on('message', (m) => {
    consumed.push([m.offset, m.key, m.value])
    if (consumed.length !== n) return
    group.setOffset(topic, m.partition, m.offset + 1)
    group.commit(true, (err) => {
      if (err) return done({ error: 'commit: ' + why(err) })
      group.close(false, () => done({ produced, consumed, committed: m.offset + 1 }))
    })
  })
}
