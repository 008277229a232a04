/**
 * The run trees an engine runs turns of, by root turn id: a child turn started here joins its
 * parent's tree, and a turn recovered here finds the tree its root (recovered first, being
 * older) already joined. A tree is forgotten when its last turn here settles.
 */
import type { RunTree } from './run-tree'

export class RunTrees {
  readonly #byRoot = new Map<string, RunTree>()

  /** The tree of `rootTurnId` this engine holds, if any. */
  get(rootTurnId: string): RunTree | undefined {
    return this.#byRoot.get(rootTurnId)
  }

  /** A turn of `tree` runs here now. */
  join(tree: RunTree): void {
    tree.members += 1
    this.#byRoot.set(tree.rootTurnId, tree)
  }

  /** A turn of `tree` settled here. */
  leave(tree: RunTree): void {
    tree.members -= 1
    if (tree.members <= 0 && this.#byRoot.get(tree.rootTurnId) === tree) this.#byRoot.delete(tree.rootTurnId)
  }
}
