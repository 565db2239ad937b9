// Drives a Sluice node with kafkajs, the Node.js client, for e2e/kafkajs_test.go.
//
//   node script.js <host:port> [count]
//
// Creates a topic, produces `count` keyed messages with acks=-1, consumes them all as a
// consumer group (auto-commit), reads the group's committed offsets back, produces 50
// more and consumes again with a new consumer in the same group, which must start at
// the committed offsets. The last stdout line is a JSON summary the Go test checks;
// the process exits non-zero on any error or when it takes longer than 25 s.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const broker = process.argv[2]
const count = parseInt(process.argv[3] || '2000', 10)
const extra = 50
const keys = 16
const partitions = 3
const topic = 'kafkajs'
const groupId = 'kafkajs-g1'

const kafka = new Kafka({
  clientId: 'sluice-e2e-kafkajs',
  brokers: [broker],
  logLevel: logLevel.ERROR,
  connectionTimeout: 5000,
  requestTimeout: 10000,
  retry: { retries: 5, initialRetryTime: 100 },
})

// Values are "k<key>-<seq>", keyed "k<seq mod keys>", so order per key is checkable.
async function produce (from, to) {
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  const acked = []
  try {
    for (let start = from; start < to; start += 500) {
      const messages = []
      for (let i = start; i < Math.min(start + 500, to); i++) {
        const key = 'k' + (i % keys)
        messages.push({ key, value: key + '-' + i })
      }
      const meta = await producer.send({ topic, acks: -1, messages })
      for (const m of meta) {
        if (m.errorCode !== 0) throw new Error('produce error code ' + m.errorCode)
        acked.push(m)
      }
    }
  } finally {
    await producer.disconnect()
  }
  return acked.length
}

// consume reads `want` messages with a new consumer of groupId and disconnects (which
// stops it after its last batch was committed and leaves the group).
async function consume (want) {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200, heartbeatInterval: 500 })
  const got = []
  let done
  const finished = new Promise(resolve => { done = resolve })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      got.push({
        partition,
        offset: Number(message.offset),
        key: message.key.toString(),
        value: message.value.toString(),
      })
      if (got.length >= want) done()
    },
  })
  await finished
  await consumer.disconnect()
  return got
}

// check counts what would make the read wrong: offsets not dense within a partition,
// a key seen in two partitions or out of production order, a message read twice.
function check (got) {
  const nextOffset = new Map()
  const keyPartition = new Map()
  const lastSeq = new Map()
  const seen = new Set()
  const bad = { offsetGaps: 0, keyMoved: 0, outOfOrder: 0, duplicates: 0 }
  for (const m of got) {
    if (nextOffset.has(m.partition) && nextOffset.get(m.partition) !== m.offset) bad.offsetGaps++
    nextOffset.set(m.partition, m.offset + 1)
    if (keyPartition.has(m.key) && keyPartition.get(m.key) !== m.partition) bad.keyMoved++
    keyPartition.set(m.key, m.partition)
    const seq = parseInt(m.value.split('-')[1], 10)
    if (lastSeq.has(m.key) && lastSeq.get(m.key) >= seq) bad.outOfOrder++
    lastSeq.set(m.key, seq)
    if (seen.has(seq)) bad.duplicates++
    seen.add(seq)
  }
  return bad
}

async function committedTotal (admin) {
  const res = await admin.fetchOffsets({ groupId, topics: [topic] })
  let sum = 0
  for (const t of res) {
    for (const p of t.partitions) sum += Math.max(0, Number(p.offset))
  }
  return sum
}

async function main () {
  const admin = kafka.admin()
  await admin.connect()
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }], waitForLeaders: true })
    const batchesAcked = await produce(0, count)
    const first = await consume(count)
    const committed = await committedTotal(admin)
    await produce(count, count + extra)
    const second = await consume(extra)
    const summary = {
      produced: count + extra,
      batchesAcked,
      consumed: first.length,
      check: check(first),
      committed,
      resumed: second.length,
      resumedCheck: check(second),
      resumedBelowCommit: second.filter(m => parseInt(m.value.split('-')[1], 10) < count).length,
      committedAfter: await committedTotal(admin),
    }
    console.log(JSON.stringify(summary))
  } finally {
    await admin.disconnect()
  }
}

const timer = setTimeout(() => {
  console.error('kafkajs script: no result within 25 s')
  process.exit(2)
}, 25000)

main().then(() => {
  clearTimeout(timer)
  process.exit(0)
}, err => {
  console.error('kafkajs script failed:', err && err.stack ? err.stack : err)
  process.exit(1)
})
