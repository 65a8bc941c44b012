/** Types of scripts/image.mjs for the tests that check the image's labels. */
export const IMAGE: string;
export function ociLabels(info: {
  version: string;
  commit: string;
  time: number;
  source?: string | undefined;
}): Record<string, string>;
export function buildImages(globals?: string[]): {
  list: string;
  baseline: string;
  images: string[];
};
