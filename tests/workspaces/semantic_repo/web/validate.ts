export function isEmailAddress(value: string): boolean {
  return /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(value);
}

export function clampNumber(value: number, low: number, high: number): number {
  return Math.min(high, Math.max(low, value));
}

export interface Paginated<T> {
  items: T[];
  nextCursor?: string;
}

export function pageOf<T>(all: T[], cursor: number, size: number): Paginated<T> {
  const items = all.slice(cursor, cursor + size);
  const next = cursor + size < all.length ? String(cursor + size) : undefined;
  return { items, nextCursor: next };
}
