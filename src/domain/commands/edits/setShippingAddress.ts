import { z } from 'zod';
import { StoredText } from '../../text.js';
import { defineEditOperation } from './operation.js';

const Text = (max: number) => StoredText(max).min(1);
export const ShippingAddressInput = z
  .strictObject({
    firstName: Text(100),
    lastName: Text(100),
    address1: Text(200),
    address2: StoredText(200).optional(),
    city: Text(100),
    provinceCode: z.string().regex(/^[A-Z0-9]{1,3}$/, { message: 'must be a subdivision code such as "CA" or "NY"' }).optional(),
    zip: Text(20),
    countryCode: z.string().regex(/^[A-Z]{2}$/, { message: 'must be an ISO 3166-1 alpha-2 country code such as "DE"' }),
    phone: z.string().regex(/^\+?[0-9 ()-]{3,30}$/, { message: 'must be a phone number such as "+49 30 1234567"' }).optional(),
  })
  .meta({ id: 'ShippingAddress' });

export const setShippingAddress = defineEditOperation({
  op: 'set_shipping_address',
  input: z
    .strictObject({ op: z.literal('set_shipping_address'), address: ShippingAddressInput })
    .meta({ title: 'SetShippingAddress', description: 'Deliver to this address from the next order on.' }),
  apply(contract, input) {
    const address = { ...input.address };
    // The address is personal data: the event says the address changed, not what it was or became.
    return { contract: { ...contract, shippingAddress: address }, change: { op: 'set_shipping_address', before: null, after: null } };
  },
});
