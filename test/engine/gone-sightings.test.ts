/** An engine's death counts once the database said so for a while (src/engine/gone-sightings.ts). */
import { confirmedLiveness, GoneSightings } from '../../src/engine/gone-sightings'

test('an owner is confirmed gone once seen gone for 200 ms, read after read; seen alive, it starts again', () => {
  const sightings = new GoneSightings(200, 1_000)
  const gone = new Set(['a:live'])
  expect(sightings.confirm(['a:live'], gone, 0)).toEqual(new Set())
  expect(sightings.confirm(['a:live'], gone, 250)).toEqual(new Set(['a:live']))
  // its session came back: the next blip is a new run
  expect(sightings.confirm(['a:live'], new Set(), 300)).toEqual(new Set())
  expect(sightings.confirm(['a:live'], gone, 400)).toEqual(new Set())
})

test('sightings further apart than maxGapMs are two blips, not one death', () => {
  const sightings = new GoneSightings(200, 1_000)
  const gone = new Set(['a:live'])
  sightings.confirm(['a:live'], gone, 0)
  expect(sightings.confirm(['a:live'], gone, 5_000)).toEqual(new Set())
  expect(sightings.confirm(['a:live'], gone, 5_250)).toEqual(new Set(['a:live']))
})

test("the watch's reads and a recovery pass's share the sightings: a pass right after one beat saw the owner gone waits, one after two beats takes it", async () => {
  let now = 0
  const liveness = { liveOwners: async () => new Set<string>(), goneOwners: async () => ['a:live'] }
  const confirmed = confirmedLiveness(liveness, new GoneSightings(), () => now)
  expect(await confirmed.goneOwners('me:live')).toEqual([])
  expect(await confirmed.liveOwners(['a:live'])).toEqual(new Set(['a:live']))
  now = 250
  expect(await confirmed.liveOwners(['a:live'])).toEqual(new Set())
  expect(await confirmed.goneOwners('me:live')).toEqual(['a:live'])
})
