/**
 * The package's source maps keep only the mappings into this repository's own sources (lib/,
 * functions/). Node with --enable-source-maps reads and parses the map of every module it loads, at
 * load, and keeps it in memory for the instance's life: the whole bundle's map, nearly all of it the
 * libraries' mappings and names, was part of every cold start and of the RSS above the empty worker
 * (docs/decisions/0057-logged-stacks-name-the-services-typescript-sources.md). What on-call reads in a logged stack is the
 * service's frames; a library's frame keeps its method name and its place in the bundle.
 */
import { decode, encode, type SourceMapMappings, type SourceMapSegment } from '@jridgewell/sourcemap-codec';

/** A source of this repository, as esbuild names it from dist/bundle/. */
export const OWN_SOURCE = /^\.\.\/\.\.\/(?:lib|functions)\//;

interface RawSourceMap {
  readonly version: number;
  readonly sources: readonly string[];
  readonly names: readonly string[];
  readonly mappings: string;
}

/**
 * The map with its mappings into other sources removed. Where such a mapping began, a segment without a
 * source ends the one before it: otherwise the library code that follows an own segment would be read
 * as that segment's source line. Sources and names no mapping uses any more are dropped.
 */
export function ownMappingsOnly(text: string): string {
  const map = JSON.parse(text) as RawSourceMap;
  const sources: string[] = [];
  const sourceIndex = new Map<number, number>();
  const names: string[] = [];
  const nameIndex = new Map<number, number>();
  const keep = <T>(index: Map<number, number>, list: T[], from: readonly T[], i: number): number => {
    let kept = index.get(i);
    if (kept === undefined) {
      kept = list.push(from[i]) - 1;
      index.set(i, kept);
    }
    return kept;
  };
  const lines: SourceMapMappings = decode(map.mappings).map((line) => {
    const out: SourceMapSegment[] = [];
    for (const segment of line) {
      if (segment.length === 1 || !OWN_SOURCE.test(map.sources[segment[1]])) {
        // Ends the own mapping before it (once; an unmapped segment after an unmapped one says nothing).
        if (out.length > 0 && out[out.length - 1].length > 1) out.push([segment[0]]);
        continue;
      }
      const source = keep(sourceIndex, sources, map.sources, segment[1]);
      out.push(
        segment.length === 5
          ? [segment[0], source, segment[2], segment[3], keep(nameIndex, names, map.names, segment[4])]
          : [segment[0], source, segment[2], segment[3]],
      );
    }
    return out;
  });
  return JSON.stringify({ ...map, sources, names, mappings: encode(lines) });
}
