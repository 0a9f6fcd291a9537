export function totalWithTax(lines, rate) {
  const subtotal = lines.reduce((sum, l) => sum + l.price * l.qty, 0);
  return Math.round(subtotal * (1 + rate) * 100) / 100;
}

export function applyCoupon(total, coupon) {
  if (coupon.percentOff) {
    return total * (1 - coupon.percentOff / 100);
  }
  return Math.max(0, total - coupon.amountOff);
}

export class Debouncer {
  constructor(delayMs) {
    this.delayMs = delayMs;
    this.timer = null;
  }

  schedule(fn) {
    clearTimeout(this.timer);
    this.timer = setTimeout(fn, this.delayMs);
  }
}
