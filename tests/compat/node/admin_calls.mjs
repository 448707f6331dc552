// Sends Kafka admin requests with @platformatic/kafka, a Node.js client whose protocol code
// (one encoder/decoder per API version) shares nothing with kafka-python or librdkafka.
//
//   node admin_calls.mjs HOST:PORT '[["describeCluster", [true, 1]], ...]'
//
// Each call is [name, args]: the high-level Admin method where the client has one
// (describeLogDirs), else the raw API function (describeCluster v1, describeProducers v0,
// offsetForLeaderEpoch v4) with the request's fields as positional args, on one connection.
// Prints one JSON list, a result per call (int64s as strings), or {"error": message, "response":
// the decoded response} for a raw call the broker answered with an error code.
import { Admin, Connection, describeClusterV1, describeProducersV0, offsetForLeaderEpochV4 } from '@platformatic/kafka'

const RAW = { describeCluster: describeClusterV1, describeProducers: describeProducersV0,
  offsetForLeaderEpoch: offsetForLeaderEpochV4 }
const bootstrap = process.argv[2]
const [host, port] = bootstrap.split(':')
const calls = JSON.parse(process.argv[3])
const conn = new Connection('minibroker-compat', { requestTimeout: 10000 })
const admin = new Admin({ clientId: 'minibroker-compat', bootstrapBrokers: [bootstrap], timeout: 10000,
  retries: 0 })
const out = []
try {
  await conn.connect(host, Number(port))
  for (const [name, args] of calls) {
    try {
      out.push(RAW[name] ? await RAW[name].api.async(conn, ...args) : await admin[name](...args))
    } catch (e) {
      if (e.code !== 'PLT_KFK_RESPONSE') throw e
      out.push({ error: e.message, response: e.response })
    }
  }
} finally {
  await conn.close()
  await admin.close()
}
process.stdout.write(JSON.stringify(out, (_, v) => typeof v === 'bigint' ? v.toString() : v))
