// A transactional producer of @platformatic/kafka, which adds its partitions with the highest
// AddPartitionsToTxn version the broker offers (v5: the batched form, verify_only false) and
// ends transactions with EndTxn v4.
//
//   node txn_producer.mjs HOST:PORT TRANSACTIONAL_ID TOPIC '["commit", "abort", ...]'
//
// Transaction i sends "<id>-<i>-0" to partition 0 and "<id>-<i>-1" to partition 1, then
// commits or aborts. Prints a JSON list of the outcomes done.
import { Producer, stringSerializers } from '@platformatic/kafka'

const [bootstrap, txnId, topic, plan] = process.argv.slice(2)
const producer = new Producer({ clientId: 'minibroker-compat-txn', bootstrapBrokers: [bootstrap], idempotent: true,
  transactionalId: txnId, serializers: stringSerializers, timeout: 10000, retries: 5, retryDelay: 50 })
const done = []
try {
  for (const [i, outcome] of JSON.parse(plan).entries()) {
    const txn = await producer.beginTransaction()
    await txn.send({ messages: [0, 1].map(p => ({ topic, partition: p, value: `${txnId}-${i}-${p}` })) })
    await (outcome === 'commit' ? txn.commit() : txn.abort())
    done.push(outcome)
  }
} finally {
  await producer.close()
}
process.stdout.write(JSON.stringify(done))
