// Drives @kafkajs/confluent-schema-registry and kafkajs (pinned in package-lock.json) against the
// gateway for tests/schema_registry/test_sr_node_client.py and prints one JSON line of what each call
// answered; the test asserts the exact values.
//
//   node run.js REGISTRY_URL BOOTSTRAP PREFIX
//
// An Avro and a JSON schema are registered (register, twice for the Avro one), looked up
// (getLatestSchemaId, getRegistryIdBySchema, getRegistryId), records encoded by registry.encode are
// produced with kafkajs to PREFIX-avro and PREFIX-json, consumed back and decoded by a second
// SchemaRegistry instance that starts with an empty cache (so it fetches each schema by the frame's id).
'use strict'
const { Kafka, logLevel } = require('kafkajs')
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')

const USER = {
  type: 'record', name: 'User', namespace: 't',
  fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'int' }],
}
const ORDER = {
  $schema: 'http://json-schema.org/draft-07/schema#', type: 'object',
  properties: { sku: { type: 'string' }, qty: { type: 'integer' } }, required: ['sku', 'qty'],
}

async function produceAndConsume(kafka, topic, values) {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true })
  await admin.disconnect()
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: values.map(value => ({ value })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `${topic}-g` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${got.length} records of ${topic} within 60 s`)), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value)
        if (got.length === values.length) {
          clearTimeout(timer)
          resolve()
        }
      },
    }).catch(reject)
  })
  await consumer.disconnect()
  return got
}

async function main() {
  const [url, bootstrap, prefix] = process.argv.slice(2)
  const registry = new SchemaRegistry({ host: url })
  const out = {}
  const avroSubject = `${prefix}-avro-value`
  const jsonSubject = `${prefix}-json-value`
  const avro = { type: SchemaType.AVRO, schema: JSON.stringify(USER) }
  const json = { type: SchemaType.JSON, schema: JSON.stringify(ORDER) }
  out.avro_id = (await registry.register(avro, { subject: avroSubject })).id
  out.avro_again = (await registry.register(avro, { subject: avroSubject })).id
  out.json_id = (await registry.register(json, { subject: jsonSubject })).id
  out.slashed_id = (await registry.register(avro, { subject: `ns/${avroSubject}` })).id
  out.latest_avro = await registry.getLatestSchemaId(avroSubject)
  out.latest_json = await registry.getLatestSchemaId(jsonSubject)
  out.by_schema_avro = await registry.getRegistryIdBySchema(avroSubject, avro)
  out.by_schema_json = await registry.getRegistryIdBySchema(jsonSubject, json)
  out.by_version = await registry.getRegistryId(avroSubject, 1)
  out.latest_slashed = await registry.getLatestSchemaId(`ns/${avroSubject}`)
  try {
    await registry.getLatestSchemaId(`${prefix}-none-value`)
    out.missing = 'found'
  } catch (e) {
    out.missing = e.message
  }

  const users = [0, 1, 2, 3, 4].map(i => ({ name: `n${i}`, age: 30 + i }))
  const orders = [0, 1, 2].map(i => ({ sku: `s${i}`, qty: i + 1 }))
  const avroValues = await Promise.all(users.map(u => registry.encode(out.avro_id, u)))
  const jsonValues = await Promise.all(orders.map(o => registry.encode(out.json_id, o)))
  try {
    await registry.encode(out.json_id, { sku: 7 })
    out.invalid_json = 'encoded'
  } catch (e) {
    out.invalid_json = e.name
  }

  const kafka = new Kafka({ clientId: 'srnode', brokers: [bootstrap], logLevel: logLevel.NOTHING })
  const reader = new SchemaRegistry({ host: url }) // empty cache: schemas come by id from the registry
  const avroRaw = await produceAndConsume(kafka, `${prefix}-avro`, avroValues)
  const jsonRaw = await produceAndConsume(kafka, `${prefix}-json`, jsonValues)
  out.avro_frames = avroRaw.map(v => [v[0], v.readUInt32BE(1)])
  out.json_frames = jsonRaw.map(v => [v[0], v.readUInt32BE(1)])
  out.avro_decoded = await Promise.all(avroRaw.map(v => reader.decode(v)))
  out.json_decoded = await Promise.all(jsonRaw.map(v => reader.decode(v)))
  console.log(JSON.stringify(out))
}

main().catch(e => {
  console.error(e && e.stack ? e.stack : e)
  process.exit(1)
})
