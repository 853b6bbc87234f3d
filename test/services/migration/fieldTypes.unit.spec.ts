import { expect } from 'chai';
import { fieldTypeOf } from '../../../services/migration/fieldTypes';
import { optionOrderOf } from '../../../services/migration/importers';

describe('migration: custom field types and option order', () => {
  it('a field type by number, or by name (type_name, or a type that is a name), as the reference lists them', () => {
    expect(fieldTypeOf({ type: 8 })).to.equal('DROPDOWN');
    expect(fieldTypeOf({ type: '9' })).to.equal('MULTI_SELECT');
    expect(fieldTypeOf({ type_name: 'Dropdown' })).to.equal('DROPDOWN');
    expect(fieldTypeOf({ type_name: 'Text (Long)' })).to.equal('TEXT_LONG');
    expect(fieldTypeOf({ type_name: 'Text (String)' })).to.equal('TEXT_STRING');
    expect(fieldTypeOf({ type: 'Multi-select' })).to.equal('MULTI_SELECT');
    expect(fieldTypeOf({ type: 99, type_name: 'checkbox' })).to.equal('CHECKBOX');
    expect(fieldTypeOf({ type_name: 'Hologram' })).to.equal(null);
    expect(fieldTypeOf({ type_name: 'constructor' })).to.equal(null);
    expect(fieldTypeOf({})).to.equal(null);
  });

  it('options keep their order per field: by explicit order, ties and options without one in the listed order', () => {
    const places = optionOrderOf([
      { sourceId: 'low', fieldId: '5', order: 0 }, { sourceId: 'medium', fieldId: '5', order: 0 }, { sourceId: 'high', fieldId: '5', order: 0 },
      { sourceId: 'a', fieldId: '6', order: null }, { sourceId: 'b', fieldId: '6', order: null },
      { sourceId: 'z', fieldId: '7', order: 3 }, { sourceId: 'y', fieldId: '7', order: 1 }, { sourceId: 'x', fieldId: '7', order: null },
    ]);
    expect(Object.fromEntries(places)).to.deep.equal({ low: 0, medium: 1, high: 2, a: 0, b: 1, y: 0, z: 1, x: 2 });
  });
});
