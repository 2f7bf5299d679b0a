/**
 * The manual's links hold: every relative link and image in README.md and docs/ names a file
 * that exists, and every `#anchor` names a heading of its target as GitHub renders it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import GithubSlugger from 'github-slugger';
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../src/gate/index.js';
import { parsePolicyTestFile } from '../src/lifecycle/policyTestFile.js';

const root = join(import.meta.dirname, '..');

function markdownFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

const pages = [join(root, 'README.md'), ...markdownFiles(join(root, 'docs'))];

/** The text outside fenced code blocks, where links are links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** The anchors GitHub gives a page's headings (and any explicit `id`s). */
function anchorsOf(path: string): Set<string> {
  const slugger = new GithubSlugger();
  const text = prose(readFileSync(path, 'utf8'));
  const anchors = new Set<string>();
  for (const [, heading] of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    // GitHub slugs the rendered text: code spans and link targets do not count.
    const rendered = heading!.replace(/`([^`]*)`/g, '$1').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    anchors.add(slugger.slug(rendered));
  }
  for (const [, id] of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id!);
  return anchors;
}

/** Every relative target a page links to: markdown links and images, and HTML src/href. */
function targetsOf(path: string): string[] {
  const text = prose(readFileSync(path, 'utf8')).replace(/`[^`\n]*`/g, '');
  const targets = [
    ...[...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
    ...[...text.matchAll(/\s(?:src|href)="([^"]+)"/g)].map((m) => m[1]!),
  ];
  return targets.filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

describe('README and docs/', () => {
  it('has pages to check', () => {
    expect(pages.length).toBeGreaterThan(0);
  });

  for (const page of pages) {
    it(`${relative(root, page)}: every relative link and anchor resolves`, () => {
      const broken: string[] = [];
      for (const target of targetsOf(page)) {
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const resolved = file === '' ? page : resolve(dirname(page), decodeURIComponent(file));
        if (!existsSync(resolved)) {
          broken.push(`${target}: no such file`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) {
          broken.push(`${target}: no heading with that anchor`);
        }
      }
      expect(broken).toEqual([]);
    });
  }
});

/** The YAML blocks of a page, as written. */
function yamlBlocks(path: string): string[] {
  return [...readFileSync(path, 'utf8').matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

describe('the policies the manual shows', () => {
  const blocks = pages.flatMap((page) =>
    yamlBlocks(page).map((text) => ({ page: relative(root, page), text })),
  );

  it('are there to check', () => {
    expect(blocks.filter((b) => b.text.startsWith('version: 1')).length).toBeGreaterThan(2);
  });

  for (const [n, { page, text }] of blocks.entries()) {
    if (text.startsWith('version: 1')) {
      it(`${page}, policy #${n}: loads`, () => {
        expect(() => compilePolicy(text)).not.toThrow();
      });
    } else if (/^(# .*\n)*cases:/.test(text)) {
      it(`${page}, policy test file #${n}: parses`, () => {
        expect(parsePolicyTestFile(text, { path: page }).cases.length).toBeGreaterThan(0);
      });
    }
  }
});
